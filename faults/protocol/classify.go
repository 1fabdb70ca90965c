package protocol

import "strconv"

// Kind is the class of a control-link message, so rules can target
// registrations, per-room metadata, ABORTs, ACKs or status notices, and
// evidence can count what passed.
type Kind string

// Message kinds, for every wire dialect of SGLang (see Classify).
const (
	// KindRegistration is decode's per-connection KV-args registration.
	KindRegistration Kind = "registration"
	// KindMetadata is a per-room TransferInfo.
	KindMetadata Kind = "metadata"
	// KindAbort is decode's ABORT for a room.
	KindAbort Kind = "abort"
	// KindAck is prefill's ABORT_ACK.
	KindAck Kind = "ack"
	// KindStatus is prefill's status notice (Mooncake's untagged one or
	// NIXL's KV_STATUS).
	KindStatus Kind = "status"
	// KindAux is Mooncake's AUX_DATA (aux buffers sent over TCP).
	KindAux Kind = "aux"
	// KindStaging is the staging-buffer traffic of a heterogeneous-TP
	// deployment: STAGING_REQ, STAGING_RSP, WATERMARK, CHUNK_READY.
	KindStaging Kind = "staging"
	// KindUnknown is a message no dialect's layout fits. It is counted,
	// relayed untouched, and matched only by a rule that names it.
	KindUnknown Kind = "unknown"
)

// Kinds lists every kind, for counters and validation.
var Kinds = []Kind{KindRegistration, KindMetadata, KindAbort, KindAck, KindStatus, KindAux, KindStaging, KindUnknown}

// Wire constants of the control messages.
const (
	GuardFrame    = "NixlMsgGuard"
	AbortFrame    = "ABORT"
	AbortAckFrame = "ABORT_ACK"
	NoneFrame     = "None"
	KVStatusFrame = "KV_STATUS"
	AuxDataFrame  = "AUX_DATA"
)

// stagingTags start the staging-buffer messages; the room is frame 1 of
// all but WATERMARK.
func stagingTag(s string) (withRoom, ok bool) {
	switch s {
	case "STAGING_REQ", "STAGING_RSP", "CHUNK_READY":
		return true, true
	case "WATERMARK":
		return false, true
	}
	return false, false
}

// Classify says what a multipart control message is, whichever dialect
// sent it (both sides of a deployment speak one, and the layouts do not
// collide). hasRoom says room is meaningful: true for metadata, abort,
// ack, status, aux and the staging messages that carry one, false for a
// registration, WATERMARK and KindUnknown. Numbers are ASCII decimal.
//
//	NIXL registration:     NixlMsgGuard, None, ip, port, agent_name, … (~20)
//	NIXL TransferInfo:     NixlMsgGuard, room, ip, port, agent_name, … (10)
//	NIXL failure notice:   KV_STATUS, room, status, rank, reason (5; 4 accepted)
//	Mooncake registration: None, ip, port, session_id, … (19; older 10+)
//	Mooncake TransferInfo: room, ip, port, session_id, … (10; older 8–9)
//	Mooncake status:       room, status, rank[, reason] (3 or 4)
//	ABORT:                 ABORT, room, decode_ip, decode_port[, …] (4+)
//	ABORT_ACK:             ABORT_ACK, room[, prefill_rank, …] (2+)
//	AUX_DATA:              AUX_DATA, room, buf_idx, aux_idx, len, data (6)
//	staging:               STAGING_REQ|STAGING_RSP|CHUNK_READY, room, …; WATERMARK, round, …
func Classify(frames [][]byte) (kind Kind, room uint64, hasRoom bool) {
	if len(frames) == 0 {
		return KindUnknown, 0, false
	}
	n := len(frames)
	f0 := string(frames[0])
	roomAt := func(i int) (uint64, bool) {
		if i >= n {
			return 0, false
		}
		return decimal(frames[i])
	}
	switch f0 {
	case GuardFrame:
		if n >= 2 && string(frames[1]) == NoneFrame {
			return KindRegistration, 0, false
		}
		if r, ok := roomAt(1); ok {
			return KindMetadata, r, true
		}
	case NoneFrame:
		if n >= 10 {
			return KindRegistration, 0, false
		}
	case AbortFrame:
		if r, ok := roomAt(1); ok && n >= 4 {
			return KindAbort, r, true
		}
	case AbortAckFrame:
		if r, ok := roomAt(1); ok {
			return KindAck, r, true
		}
	case KVStatusFrame:
		if r, ok := roomAt(1); ok && n >= 4 && isStatus(frames[2], frames[3]) {
			return KindStatus, r, true
		}
	case AuxDataFrame:
		if r, ok := roomAt(1); ok {
			return KindAux, r, true
		}
	default:
		if withRoom, ok := stagingTag(f0); ok {
			if !withRoom {
				return KindStaging, 0, false
			}
			if r, ok := roomAt(1); ok {
				return KindStaging, r, true
			}
			break
		}
		r, ok := decimal(frames[0])
		if !ok {
			break
		}
		switch {
		case (n == 3 || n == 4) && isStatus(frames[1], frames[2]):
			return KindStatus, r, true
		case n >= 8:
			if _, port := decimal(frames[2]); port {
				return KindMetadata, r, true
			}
		}
	}
	return KindUnknown, 0, false
}

// isStatus: a KVPoll value (signed, so a corrupt negative still reads as
// a status rather than something else) and a rank.
func isStatus(status, rank []byte) bool {
	_, ok1 := signedDecimal(status)
	_, ok2 := decimal(rank)
	return ok1 && ok2
}

func decimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

func signedDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}
