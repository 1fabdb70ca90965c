package core

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

// Dialect is the control-message codec of one wire dialect. The room state
// machine is the same for every dialect; only the frames differ. Each
// dialect is one table (nixlTable, mooncakeTable) of encoders and parsers
// laid out as in SGLang's NIXL and Mooncake connectors. The zero Dialect is
// NIXL, the default.
type Dialect struct{ wire contract.Wire }

// dialectTable is one dialect's layouts.
type dialectTable struct {
	registration func(Registration) [][]byte
	metadata     func(Metadata) [][]byte
	abort        func(Abort) [][]byte
	abortAck     func(room uint64, rank int) [][]byte
	status       func(room uint64, s KVPoll, rank int, reason string) [][]byte
	control      func([][]byte) (Control, error)
	notice       func([][]byte) (Notice, error)
	// agentName is the key decode registers under: unique is a name
	// unique to the decode rank's process, kvAddr its KV listener.
	agentName func(unique, kvAddr string) string
	// kvTarget names the memory a KV write goes to, from the agent name
	// and KV base of the registration it was filed under: on NIXL the
	// agent name alone (unique per process); on Mooncake the session_id
	// and the buffers' address, since a restarted decode keeps its
	// session_id but not its buffers.
	kvTarget func(agent string, base uint64) string
	// epochNames: the agent name can carry decode's epoch towards a
	// prefill peer (NIXL's is free-form; Mooncake's is the KV address).
	epochNames bool
	// unexpectedAbort is why a bootstrap loop that does not know ABORT
	// dies on one (bootstrap-thread-death).
	unexpectedAbort string
	// successOnControl: a room's success travels on the control plane.
	// Mooncake's conclude_transfer pushes the Success status to decode
	// over ZMQ and decode's room succeeds on it (once every required
	// prefill rank sent it); NIXL's success is NIXL/UCX notifications,
	// here the KV link's aux message alone.
	successOnControl bool
}

// NewDialect returns the codec of w; an empty w is NIXL.
func NewDialect(w contract.Wire) (Dialect, error) {
	w, err := contract.ParseWire(string(w))
	if err != nil {
		return Dialect{}, fmt.Errorf("choose control-message codec: %w", err)
	}
	return Dialect{wire: w}, nil
}

// dialectOf is NewDialect for an already validated config: anything it
// does not know is the default.
func dialectOf(w contract.Wire) Dialect {
	d, err := NewDialect(w)
	if err != nil {
		return Dialect{}
	}
	return d
}

// Wire names the dialect.
func (d Dialect) Wire() contract.Wire {
	if d.wire == "" {
		return contract.WireNIXL
	}
	return d.wire
}

func (d Dialect) table() dialectTable {
	if d.wire == contract.WireMooncake {
		return mooncakeTable()
	}
	return nixlTable()
}

// Registration encodes decode's per-connection registration.
func (d Dialect) Registration(r Registration) [][]byte { return d.table().registration(r) }

// Metadata encodes a per-request TransferInfo.
func (d Dialect) Metadata(m Metadata) [][]byte { return d.table().metadata(m) }

// Abort encodes decode's ABORT for a room.
func (d Dialect) Abort(a Abort) [][]byte { return d.table().abort(a) }

// AbortAck encodes prefill rank's acknowledgement of an ABORT, sent once its
// in-flight writes for the room have drained.
func (d Dialect) AbortAck(room uint64, rank int) [][]byte { return d.table().abortAck(room, rank) }

// Status encodes prefill rank's status notice for a room (a failure, so
// decode need not wait for its timeout; SGLang #36612).
func (d Dialect) Status(room uint64, s KVPoll, rank int, reason string) [][]byte {
	return d.table().status(room, s, rank, reason)
}

// ParseControl parses a decode→prefill message: registration, TransferInfo
// or ABORT. Errors wrap ErrMalformed.
func (d Dialect) ParseControl(f [][]byte) (Control, error) { return d.table().control(f) }

// ParseNotice parses a prefill→decode message: ABORT_ACK or status. Errors
// wrap ErrMalformed.
func (d Dialect) ParseNotice(f [][]byte) (Notice, error) { return d.table().notice(f) }

// AgentName is the name a decode rank registers under and its TransferInfos
// carry: NIXL's agent_name is unique (per process, so a restarted decode
// refuses writes meant for its predecessor); Mooncake's session_id is the
// rank's KV address, "ip:port".
func (d Dialect) AgentName(unique, kvAddr string) string { return d.table().agentName(unique, kvAddr) }

// KVTarget is what a KV write for the registration (agent, base) is
// addressed to on the KV link: decode refuses one that names memory its
// process never registered, as an RDMA write to a stale memory key fails.
func (d Dialect) KVTarget(agent string, base uint64) string { return d.table().kvTarget(agent, base) }

// nixlTable is SGLang NIXL: a guard frame first on registration and
// TransferInfo; ABORT unguarded (#30352); failure notice
// KV_STATUS, room, status, rank, reason (#36612).
func nixlTable() dialectTable {
	return dialectTable{
		registration: func(r Registration) [][]byte {
			// GUARD, None, ip, port, agent_name, agent_metadata, kv_ptrs,
			// aux_ptrs, state_ptrs, gpu_id, attn_tp_size, engine_rank,
			// kv_item_len, …, dst_num_slots, memory kind, … (20 frames).
			return [][]byte{str(Guard), str(TagNone), str(r.DecodeIP), itoa(r.DecodePort), str(r.AgentName),
				str("kv=" + r.KVAddr), empty(), empty(), empty(), str("0"), itoa(r.DecodeTP), itoa(r.DecodeRank),
				itoa(16), empty(), empty(), empty(), empty(), itoa(r.DstNumSlots), str("VRAM"), empty()}
		},
		metadata: func(m Metadata) [][]byte {
			// GUARD, room, ip, port, agent_name, kv_indices, aux_index,
			// required_dst_info_num, state_indices, decode_prefix_len (10).
			return [][]byte{str(Guard), utoa(m.Room), str(m.DecodeIP), itoa(m.DecodePort), str(m.AgentName),
				int32s(m.Pages), itoa(m.AuxIndex), itoa(m.RequiredDst), empty(), itoa(m.PrefixLen)}
		},
		abort:    abortFrames,
		abortAck: abortAckFrames,
		status: func(room uint64, s KVPoll, rank int, reason string) [][]byte {
			return [][]byte{str(TagKVStatus), utoa(room), itoa(int(s)), itoa(rank), str(reason)}
		},
		control:          nixlControl,
		notice:           nixlNotice,
		agentName:        func(unique, _ string) string { return unique },
		kvTarget:         func(agent string, _ uint64) string { return agent },
		epochNames:       true,
		unexpectedAbort:  "assert frame 0 == " + Guard + " failed",
		successOnControl: contract.WireNIXL.SuccessOnControl(),
	}
}

// nixlControl: ABORT is recognised before the guard check (the fix of
// #30352); every other message must be guarded.
func nixlControl(f [][]byte) (Control, error) {
	if len(f) > 0 && string(f[0]) == TagAbort {
		a, err := parseAbort(f)
		return Control{Kind: MsgAbort, Abort: a}, err
	}
	if len(f) < 2 || string(f[0]) != Guard {
		return Control{}, fmt.Errorf("%w: %d frames without the %s guard", ErrMalformed, len(f), Guard)
	}
	if string(f[1]) == TagNone {
		r, err := nixlRegistration(f)
		return Control{Kind: MsgRegistration, Registration: r}, err
	}
	m, err := nixlMetadata(f)
	return Control{Kind: MsgMetadata, Metadata: m}, err
}

// nixlRegistration reads a NIXL registration of any SGLang era: after
// GUARD, None, ip, port, agent_name, agent_metadata, kv_ptrs and aux_ptrs,
// the v0.4-era layout (12 frames) has gpu_id, tp_size, tp_rank,
// kv_item_len; since state_ptrs came in (main@2026, about 20 frames) it is
// state_ptrs, gpu_id, attn_tp_size, engine_rank, kv_item_len, … with
// dst_num_slots at 17. The two are told apart by frame 8, gpu_id (a
// decimal) or state_ptrs (a binary list, empty without state). The agent
// metadata of a pdchaos decode is "kv=HOST:PORT", its KV listener; a real
// NIXL decode's is an opaque blob the bundled prefill cannot write to, so
// it registers with no KV address and its rooms fail at their first write
// (decode gets a Failed status) instead of its registration being refused.
func nixlRegistration(f [][]byte) (Registration, error) {
	if len(f) < 12 {
		return Registration{}, fmt.Errorf("%w: registration has %d frames, want at least 12", ErrMalformed, len(f))
	}
	var r Registration
	var err error
	r.DecodeIP = string(f[2])
	if r.DecodePort, err = atoport(f[3], "decode port"); err != nil {
		return r, err
	}
	r.AgentName = string(f[4])
	if meta, ok := strings.CutPrefix(string(f[5]), "kv="); ok {
		r.KVAddr = meta
	}
	tp, withState := 10, true
	if _, err := atonat(f[8], "gpu_id"); err == nil {
		tp, withState = 9, false
	} else if len(f) < 13 {
		return r, fmt.Errorf("%w: registration has %d frames with state_ptrs, want at least 13", ErrMalformed, len(f))
	}
	if r.DecodeTP, err = atonat(f[tp], "decode tp size"); err != nil {
		return r, err
	}
	if r.DecodeRank, err = atonat(f[tp+1], "decode tp rank"); err != nil {
		return r, err
	}
	if withState && len(f) > 17 && len(f[17]) > 0 {
		if r.DstNumSlots, err = atonat(f[17], "dst_num_slots"); err != nil {
			return r, err
		}
	}
	return r, nil
}

// nixlMetadata reads a NIXL TransferInfo of 8 frames (GUARD, room, ip,
// port, agent_name, kv_indices, aux_index, required_dst_info_num: the
// layout before state) to 10 (main@2026 adds state_indices and
// decode_prefix_len), ignoring any beyond.
func nixlMetadata(f [][]byte) (Metadata, error) {
	if len(f) < 8 {
		return Metadata{}, fmt.Errorf("%w: metadata has %d frames, want 8 to 10", ErrMalformed, len(f))
	}
	var m Metadata
	var err error
	if m.Room, err = atou(f[1], "room"); err != nil {
		return m, err
	}
	m.DecodeIP = string(f[2])
	if m.DecodePort, err = atoport(f[3], "decode port"); err != nil {
		return m, err
	}
	m.AgentName = string(f[4])
	if m.Pages, err = parseInt32s(f[5], "kv_indices"); err != nil {
		return m, err
	}
	if m.AuxIndex, err = atoi(f[6], "aux_index"); err != nil {
		return m, err
	}
	if m.RequiredDst, err = atoi(f[7], "required_dst_info_num"); err != nil {
		return m, err
	}
	if len(f) > 9 {
		if m.PrefixLen, err = atoi(f[9], "decode_prefix_len"); err != nil {
			return m, err
		}
	}
	return m, nil
}

// nixlNotice: ABORT_ACK (deferred release, #35360) or KV_STATUS.
func nixlNotice(f [][]byte) (Notice, error) {
	switch {
	case len(f) > 0 && string(f[0]) == TagAbortAck:
		return parseAbortAck(f)
	case len(f) > 0 && string(f[0]) == TagKVStatus:
		if len(f) < 4 {
			return Notice{Kind: MsgStatus}, fmt.Errorf("%w: %s has %d frames, want 5", ErrMalformed, TagKVStatus, len(f))
		}
		return parseStatus(f, 1)
	}
	return Notice{}, fmt.Errorf("%w: notice of %d frames is neither %s nor %s", ErrMalformed, len(f), TagAbortAck, TagKVStatus)
}

// mooncakeTable is SGLang Mooncake: no guard; a registration starts with
// "None", a TransferInfo with its room; status notices are untagged.
func mooncakeTable() dialectTable {
	return dialectTable{
		registration: func(r Registration) [][]byte {
			// None, ip, port, session_id, kv_ptrs (Q×n), aux_ptrs (Q),
			// state_ptrs (plist), dst_tp_rank, dst_attn_tp_size,
			// kv_item_len, state_item_lens, state_dims, kv_layer_ids (I×n),
			// state_layer_ids, staging_base, staging_size, dcp_size,
			// dcp_rank, staging_slot_ids (19 frames, main@2026).
			ptr := make([]byte, 8)
			binary.LittleEndian.PutUint64(ptr, r.KVBase)
			aux := make([]byte, 8)
			binary.LittleEndian.PutUint64(aux, 0x7e00_0000_0000+uint64(r.DecodeRank)<<32)
			layer := make([]byte, 4)
			return [][]byte{str(TagNone), str(r.DecodeIP), itoa(r.DecodePort), str(r.KVAddr), ptr, aux, empty(),
				itoa(r.DecodeRank), itoa(r.DecodeTP), itoa(16), empty(), empty(), layer, empty(), empty(), str("0"),
				str("1"), str("0"), empty()}
		},
		metadata: func(m Metadata) [][]byte {
			// room, ip, port, session_id, dst_kv_indices, aux_index,
			// state_indices, required_dst_info_num, decode_prefix_len,
			// device_kv_indices (10 frames).
			return [][]byte{utoa(m.Room), str(m.DecodeIP), itoa(m.DecodePort), str(m.AgentName), int32s(m.Pages),
				itoa(m.AuxIndex), empty(), itoa(m.RequiredDst), itoa(m.PrefixLen), empty()}
		},
		abort:    abortFrames,
		abortAck: abortAckFrames,
		status: func(room uint64, s KVPoll, rank int, _ string) [][]byte {
			// Still 3 frames after #36612; the reason frame is optional.
			return [][]byte{utoa(room), itoa(int(s)), itoa(rank)}
		},
		control:   mooncakeControl,
		notice:    mooncakeNotice,
		agentName: func(_, kvAddr string) string { return kvAddr },
		kvTarget:  func(agent string, base uint64) string { return fmt.Sprintf("%s@%#x", agent, base) },
		// The Mooncake thread always knew ABORT (#27372); a loop with the
		// regression on is the NIXL thread of #30352 whatever the layout.
		unexpectedAbort:  "bootstrap loop does not handle " + TagAbort,
		successOnControl: contract.WireMooncake.SuccessOnControl(),
	}
}

func mooncakeControl(f [][]byte) (Control, error) {
	if len(f) == 0 {
		return Control{}, fmt.Errorf("%w: empty message", ErrMalformed)
	}
	switch string(f[0]) {
	case TagAbort:
		a, err := parseAbort(f)
		return Control{Kind: MsgAbort, Abort: a}, err
	case TagNone:
		r, err := mooncakeRegistration(f)
		return Control{Kind: MsgRegistration, Registration: r}, err
	}
	m, err := mooncakeMetadata(f)
	return Control{Kind: MsgMetadata, Metadata: m}, err
}

// mooncakeRegistration reads the first 10 frames; older builds send only
// those, newer ones a longer optional tail.
func mooncakeRegistration(f [][]byte) (Registration, error) {
	if len(f) < 10 {
		return Registration{}, fmt.Errorf("%w: registration has %d frames, want at least 10", ErrMalformed, len(f))
	}
	var r Registration
	var err error
	r.DecodeIP = string(f[1])
	if r.DecodePort, err = atoport(f[2], "decode port"); err != nil {
		return r, err
	}
	session := string(f[3])
	if !strings.Contains(session, ":") {
		return r, fmt.Errorf("%w: registration session_id %q is not ip:port", ErrMalformed, session)
	}
	r.AgentName, r.KVAddr = session, session
	if len(f[4]) >= 8 { // kv_ptrs, Q×n: the first layer's buffer
		r.KVBase = binary.LittleEndian.Uint64(f[4])
	}
	if r.DecodeRank, err = atonat(f[7], "dst_tp_rank"); err != nil {
		return r, err
	}
	if r.DecodeTP, err = atonat(f[8], "dst_attn_tp_size"); err != nil {
		return r, err
	}
	if _, err = atonat(f[9], "kv_item_len"); err != nil {
		return r, err
	}
	return r, nil
}

// mooncakeMetadata accepts 8 to 10 frames (older builds lack
// decode_prefix_len and device_kv_indices) and ignores any beyond.
func mooncakeMetadata(f [][]byte) (Metadata, error) {
	if len(f) < 8 {
		return Metadata{}, fmt.Errorf("%w: TransferInfo has %d frames, want 8 to 10", ErrMalformed, len(f))
	}
	var m Metadata
	var err error
	if m.Room, err = atou(f[0], "room"); err != nil {
		return m, err
	}
	m.DecodeIP = string(f[1])
	if m.DecodePort, err = atoport(f[2], "decode port"); err != nil {
		return m, err
	}
	m.AgentName = string(f[3])
	if m.Pages, err = parseInt32s(f[4], "dst_kv_indices"); err != nil {
		return m, err
	}
	m.AuxIndex = -1
	if len(f[5]) > 0 {
		if m.AuxIndex, err = atoi(f[5], "aux_index"); err != nil {
			return m, err
		}
	}
	if m.RequiredDst, err = atoi(f[7], "required_dst_info_num"); err != nil {
		return m, err
	}
	if len(f) > 8 {
		if m.PrefixLen, err = atoi(f[8], "decode_prefix_len"); err != nil {
			return m, err
		}
	}
	return m, nil
}

// mooncakeNotice: ABORT_ACK, or the untagged room, status, rank[, reason].
func mooncakeNotice(f [][]byte) (Notice, error) {
	if len(f) > 0 && string(f[0]) == TagAbortAck {
		return parseAbortAck(f)
	}
	if len(f) == 3 || len(f) == 4 {
		return parseStatus(f, 0)
	}
	what := "untagged"
	if len(f) > 0 && len(f[0]) > 0 && (f[0][0] < '0' || f[0][0] > '9') {
		what = fmt.Sprintf("%.20q", f[0])
	}
	return Notice{}, fmt.Errorf("%w: %s notice of %d frames is neither %s nor a status", ErrMalformed, what, len(f), TagAbortAck)
}
