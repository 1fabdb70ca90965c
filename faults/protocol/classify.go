package protocol

import "strconv"

// Kind is the class of a control-link message, so rules can target
// registrations, per-room metadata, ABORTs, ACKs or status notices.
type Kind string

// Message kinds (layouts mirror SGLang NIXL's; see Classify).
const (
	KindRegistration Kind = "registration"
	KindMetadata     Kind = "metadata"
	KindAbort        Kind = "abort"
	KindAck          Kind = "ack"
	KindStatus       Kind = "status"
	KindOther        Kind = "other"
)

// Kinds lists every kind, for counters and validation.
var Kinds = []Kind{KindRegistration, KindMetadata, KindAbort, KindAck, KindStatus, KindOther}

// Wire constants of the control messages.
const (
	GuardFrame    = "NixlMsgGuard"
	AbortFrame    = "ABORT"
	AbortAckFrame = "ABORT_ACK"
	NoneFrame     = "None"
)

// Classify says what a multipart control message is. ok is false for
// KindOther (unknown layout, passed through untouched); room is meaningful
// for metadata, abort, ack and status, and 0 for a registration.
//
//	registration: NixlMsgGuard, None, decode_ip, decode_rank_port, agent_name, ...
//	metadata:     NixlMsgGuard, room, decode_ip, decode_rank_port, agent_name, ...
//	abort:        ABORT, room, decode_ip, decode_rank_port
//	ack:          ABORT_ACK, room, prefill_rank     (prefill→decode)
//	status:       room, status_int, prefill_rank    (prefill→decode)
//
// Numbers are ASCII decimal.
func Classify(frames [][]byte) (kind Kind, room uint64, ok bool) {
	if len(frames) == 0 {
		return KindOther, 0, false
	}
	switch string(frames[0]) {
	case GuardFrame:
		if len(frames) < 2 {
			return KindOther, 0, false
		}
		if string(frames[1]) == NoneFrame {
			return KindRegistration, 0, true
		}
		if r, ok := decimal(frames[1]); ok {
			return KindMetadata, r, true
		}
	case AbortFrame:
		if len(frames) == 4 {
			if r, ok := decimal(frames[1]); ok {
				return KindAbort, r, true
			}
		}
	case AbortAckFrame:
		if len(frames) >= 2 && len(frames) <= 3 {
			if r, ok := decimal(frames[1]); ok {
				return KindAck, r, true
			}
		}
	}
	if len(frames) == 3 {
		r, ok1 := decimal(frames[0])
		_, ok2 := signedDecimal(frames[1])
		_, ok3 := decimal(frames[2])
		if ok1 && ok2 && ok3 {
			return KindStatus, r, true
		}
	}
	return KindOther, 0, false
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
