package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Guard is the first frame of NIXL's registration and TransferInfo.
const Guard = "NixlMsgGuard"

// Tags of the control messages that start with a tag rather than a room,
// "None" or the guard.
const (
	TagAbort    = "ABORT"
	TagAbortAck = "ABORT_ACK"
	// TagKVStatus starts NIXL's failure notice (SGLang #36612).
	TagKVStatus = "KV_STATUS"
	// TagNone is frame 0 of a Mooncake registration and frame 1 of a NIXL
	// one: a registration has no room.
	TagNone = "None"
)

// ErrMalformed marks a control message that cannot be parsed.
var ErrMalformed = errors.New("malformed control message")

// MsgKind classifies control messages.
type MsgKind int

// Control message kinds.
const (
	MsgUnknown MsgKind = iota
	MsgRegistration
	MsgMetadata
	MsgAbort
	MsgAbortAck
	MsgStatus
)

// Registration is sent once per decode→prefill connection.
type Registration struct {
	DecodeIP   string
	DecodePort int // decode rank's notify (PULL) port
	// AgentName is the key prefill files the registration under and that
	// every TransferInfo names: NIXL's agent_name, Mooncake's session_id
	// (the decode rank's KV address, so equal to KVAddr).
	AgentName string
	KVAddr    string // where prefill sends KV chunks
	// KVBase is the address of the rank's KV buffers (Mooncake's
	// kv_ptrs[0]; 0 on NIXL, whose agent name already tells processes
	// apart). Prefill's writes are addressed to it, so a write filed under
	// a predecessor process's registration misses the new one's buffers.
	KVBase      uint64
	DecodeTP    int
	DecodeRank  int
	DstNumSlots int // NIXL only; 0 when the dialect does not carry it
}

// Metadata is sent per request after decode preallocated its pages
// (SGLang's TransferInfo).
type Metadata struct {
	Room       uint64
	DecodeIP   string
	DecodePort int
	AgentName  string // agent_name (NIXL) or session_id (Mooncake)
	Pages      []uint32
	// AuxIndex is the aux slot; -1 when a Mooncake peer sent "" (a dummy).
	AuxIndex    int
	RequiredDst int
	PrefixLen   int
}

// Abort tells prefill that decode gave a room up.
type Abort struct {
	Room       uint64
	DecodeIP   string
	DecodePort int
}

// Control is one parsed decode→prefill message. Kind is set from the
// message's leading frames even when parsing the rest failed, so a caller
// knows what it refused.
type Control struct {
	Kind         MsgKind
	Registration Registration // Kind == MsgRegistration
	Metadata     Metadata     // Kind == MsgMetadata
	Abort        Abort        // Kind == MsgAbort
}

// Notice is one parsed prefill→decode message: an ABORT_ACK or a status.
type Notice struct {
	Kind   MsgKind // MsgAbortAck or MsgStatus
	Room   uint64
	Status KVPoll // MsgStatus only
	// Rank is the prefill rank that sent it; -1 for a 2-frame ABORT_ACK,
	// which does not say.
	Rank   int
	Reason string // the optional failure reason of a status
}

func itoa(n int) []byte    { return []byte(strconv.Itoa(n)) }
func utoa(n uint64) []byte { return []byte(strconv.FormatUint(n, 10)) }
func empty() []byte        { return []byte{} }
func str(s string) []byte  { return []byte(s) }

// maxDigits is the longest number frame accepted: 20 digits hold any
// 64-bit value. The protocol proxy's classifier has the same bound, so a
// zero-padded run of digits is refused by both, not acted on by one.
const maxDigits = 20

// digits refuses a number frame longer than maxDigits.
func digits(b []byte, what string) error {
	if len(b) > maxDigits {
		return fmt.Errorf("%w: %s is %d bytes, longer than any 64-bit decimal", ErrMalformed, what, len(b))
	}
	return nil
}

func atoi(b []byte, what string) (int, error) {
	if err := digits(b, what); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not an integer", ErrMalformed, what, b)
	}
	return n, nil
}

// atonat parses a count, size or rank: an unsigned decimal, as the
// protocol proxy's classifier reads one, so the engine never acts on a
// message the proxy would call unknown.
func atonat(b []byte, what string) (int, error) {
	if err := digits(b, what); err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(b), 10, strconv.IntSize-1)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a non-negative integer", ErrMalformed, what, b)
	}
	return int(n), nil
}

// atoport parses a TCP port: an unsigned decimal up to 65535.
func atoport(b []byte, what string) (int, error) {
	if err := digits(b, what); err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(b), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a port", ErrMalformed, what, b)
	}
	return int(n), nil
}

func atou(b []byte, what string) (uint64, error) {
	if err := digits(b, what); err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not an unsigned integer", ErrMalformed, what, b)
	}
	return n, nil
}

// int32s packs page indices as SGLang's raw int32 little-endian array.
func int32s(pages []uint32) []byte {
	b := make([]byte, 4*len(pages))
	for i, p := range pages {
		binary.LittleEndian.PutUint32(b[4*i:], p)
	}
	return b
}

func parseInt32s(b []byte, what string) ([]uint32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: %s is %d bytes, not a multiple of 4", ErrMalformed, what, len(b))
	}
	var out []uint32
	for i := 0; i < len(b); i += 4 {
		out = append(out, binary.LittleEndian.Uint32(b[i:]))
	}
	return out, nil
}

// abortFrames is the ABORT both dialects send: ABORT, room, decode_ip,
// decode_port (4 frames, unguarded).
func abortFrames(a Abort) [][]byte {
	return [][]byte{str(TagAbort), utoa(a.Room), str(a.DecodeIP), itoa(a.DecodePort)}
}

// parseAbort accepts ABORT with 4 or more frames: open upstream work adds
// generation or token frames after the port.
func parseAbort(f [][]byte) (Abort, error) {
	if len(f) < 4 || string(f[0]) != TagAbort {
		return Abort{}, fmt.Errorf("%w: ABORT has %d frames, want at least 4", ErrMalformed, len(f))
	}
	room, err := atou(f[1], "room")
	if err != nil {
		return Abort{}, err
	}
	port, err := atoport(f[3], "decode port")
	if err != nil {
		return Abort{}, err
	}
	return Abort{Room: room, DecodeIP: string(f[2]), DecodePort: port}, nil
}

// abortAckFrames is the ABORT_ACK of deferred release, which the bundled
// decode always runs (it holds an aborted room's pages until every prefill
// rank acknowledges): ABORT_ACK, room, prefill_rank.
//
// A negative rank (a Notice from a 2-frame ACK, which does not say) is
// written as that 2-frame form: ABORT_ACK, room.
func abortAckFrames(room uint64, rank int) [][]byte {
	if rank < 0 {
		return [][]byte{str(TagAbortAck), utoa(room)}
	}
	return [][]byte{str(TagAbortAck), utoa(room), itoa(rank)}
}

// parseAbortAck accepts ABORT_ACK, room (2 frames, Mooncake without
// deferred release) and ABORT_ACK, room, rank[, …] (3 or more).
func parseAbortAck(f [][]byte) (Notice, error) {
	if len(f) < 2 {
		return Notice{Kind: MsgAbortAck}, fmt.Errorf("%w: ABORT_ACK has %d frames, want at least 2", ErrMalformed, len(f))
	}
	n := Notice{Kind: MsgAbortAck, Status: Failed, Rank: -1}
	var err error
	if n.Room, err = atou(f[1], "room"); err != nil {
		return n, err
	}
	if len(f) >= 3 {
		if n.Rank, err = atonat(f[2], "prefill rank"); err != nil {
			return n, err
		}
	}
	return n, nil
}

// parseStatus reads room, status, rank and an optional reason from four
// consecutive frames of f starting at i.
func parseStatus(f [][]byte, i int) (Notice, error) {
	n := Notice{Kind: MsgStatus}
	var err error
	if n.Room, err = atou(f[i], "room"); err != nil {
		return n, err
	}
	var s int
	if s, err = atoi(f[i+1], "status"); err != nil {
		return n, err
	}
	if s < int(Failed) || s > int(Success) {
		return n, fmt.Errorf("%w: status %d is not a KVPoll value", ErrMalformed, s)
	}
	n.Status = KVPoll(s)
	if n.Rank, err = atonat(f[i+2], "prefill rank"); err != nil {
		return n, err
	}
	if len(f) > i+3 {
		n.Reason = string(f[i+3])
	}
	return n, nil
}
