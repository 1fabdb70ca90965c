package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Guard is the first frame of every guarded control message, as in SGLang NIXL.
const Guard = "NixlMsgGuard"

// Control message tags that are not guarded.
const (
	TagAbort    = "ABORT"
	TagAbortAck = "ABORT_ACK"
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
	DecodeIP    string
	DecodePort  int    // decode rank's notify (PULL) port
	AgentName   string // unique per decode rank
	KVAddr      string // where prefill sends KV chunks (in agent_metadata)
	DecodeTP    int
	DecodeRank  int
	DstNumSlots int
}

// Metadata is sent per request after decode preallocated its pages.
type Metadata struct {
	Room        uint64
	DecodeIP    string
	DecodePort  int
	AgentName   string
	Pages       []uint32
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

func itoa(n int) []byte    { return []byte(strconv.Itoa(n)) }
func utoa(n uint64) []byte { return []byte(strconv.FormatUint(n, 10)) }
func empty() []byte        { return []byte{} }
func str(s string) []byte  { return []byte(s) }

// Frames encodes the registration as NIXL's 20-frame layout.
func (r Registration) Frames() [][]byte {
	return [][]byte{str(Guard), str("None"), str(r.DecodeIP), itoa(r.DecodePort), str(r.AgentName),
		str("kv=" + r.KVAddr), empty(), empty(), empty(), str("0"), itoa(r.DecodeTP), itoa(r.DecodeRank),
		itoa(16), empty(), empty(), empty(), empty(), itoa(r.DstNumSlots), str("VRAM"), empty()}
}

// Frames encodes per-request metadata as NIXL's 10-frame layout.
func (m Metadata) Frames() [][]byte {
	pages := make([]byte, 4*len(m.Pages))
	for i, p := range m.Pages {
		binary.LittleEndian.PutUint32(pages[4*i:], p)
	}
	return [][]byte{str(Guard), utoa(m.Room), str(m.DecodeIP), itoa(m.DecodePort), str(m.AgentName),
		pages, itoa(m.AuxIndex), itoa(m.RequiredDst), empty(), itoa(m.PrefixLen)}
}

// Frames encodes the unguarded 4-frame ABORT.
func (a Abort) Frames() [][]byte {
	return [][]byte{str(TagAbort), utoa(a.Room), str(a.DecodeIP), itoa(a.DecodePort)}
}

// AbortAckFrames encodes prefill's acknowledgement of an ABORT, sent once its
// in-flight writes for the room have drained.
func AbortAckFrames(room uint64, prefillRank int) [][]byte {
	return [][]byte{str(TagAbortAck), utoa(room), itoa(prefillRank)}
}

// StatusFrames encodes prefill's terminal-status notice for a room.
func StatusFrames(room uint64, s KVPoll, prefillRank int) [][]byte {
	return [][]byte{utoa(room), itoa(int(s)), itoa(prefillRank)}
}

func atoi(b []byte, what string) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not an integer", ErrMalformed, what, b)
	}
	return n, nil
}

func atou(b []byte, what string) (uint64, error) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not an unsigned integer", ErrMalformed, what, b)
	}
	return n, nil
}

// ParseAbort parses a 4-frame ABORT.
func ParseAbort(f [][]byte) (Abort, error) {
	if len(f) != 4 || string(f[0]) != TagAbort {
		return Abort{}, fmt.Errorf("%w: ABORT has %d frames, want 4", ErrMalformed, len(f))
	}
	room, err := atou(f[1], "room")
	if err != nil {
		return Abort{}, err
	}
	port, err := atoi(f[3], "decode port")
	if err != nil {
		return Abort{}, err
	}
	return Abort{Room: room, DecodeIP: string(f[2]), DecodePort: port}, nil
}

// ParseRegistration parses a guarded registration.
func ParseRegistration(f [][]byte) (Registration, error) {
	if len(f) < 18 {
		return Registration{}, fmt.Errorf("%w: registration has %d frames, want 20", ErrMalformed, len(f))
	}
	var r Registration
	var err error
	r.DecodeIP = string(f[2])
	if r.DecodePort, err = atoi(f[3], "decode port"); err != nil {
		return r, err
	}
	r.AgentName = string(f[4])
	meta := string(f[5])
	if len(meta) < 3 || meta[:3] != "kv=" {
		return r, fmt.Errorf("%w: registration agent_metadata %q lacks kv=ADDR", ErrMalformed, meta)
	}
	r.KVAddr = meta[3:]
	if r.DecodeTP, err = atoi(f[10], "decode tp size"); err != nil {
		return r, err
	}
	if r.DecodeRank, err = atoi(f[11], "decode tp rank"); err != nil {
		return r, err
	}
	if r.DstNumSlots, err = atoi(f[17], "dst_num_slots"); err != nil {
		return r, err
	}
	return r, nil
}

// ParseMetadata parses guarded per-request metadata.
func ParseMetadata(f [][]byte) (Metadata, error) {
	if len(f) != 10 {
		return Metadata{}, fmt.Errorf("%w: metadata has %d frames, want 10", ErrMalformed, len(f))
	}
	var m Metadata
	var err error
	if m.Room, err = atou(f[1], "room"); err != nil {
		return m, err
	}
	m.DecodeIP = string(f[2])
	if m.DecodePort, err = atoi(f[3], "decode port"); err != nil {
		return m, err
	}
	m.AgentName = string(f[4])
	if len(f[5])%4 != 0 {
		return m, fmt.Errorf("%w: kv_page_indices is %d bytes, not a multiple of 4", ErrMalformed, len(f[5]))
	}
	for i := 0; i < len(f[5]); i += 4 {
		m.Pages = append(m.Pages, binary.LittleEndian.Uint32(f[5][i:]))
	}
	if m.AuxIndex, err = atoi(f[6], "aux_index"); err != nil {
		return m, err
	}
	if m.RequiredDst, err = atoi(f[7], "required_dst_info_num"); err != nil {
		return m, err
	}
	if m.PrefixLen, err = atoi(f[9], "decode_prefix_len"); err != nil {
		return m, err
	}
	return m, nil
}

// ParseNotice parses a prefill→decode notice: an ABORT_ACK or a status.
func ParseNotice(f [][]byte) (kind MsgKind, room uint64, status KVPoll, rank int, err error) {
	if len(f) == 3 && string(f[0]) == TagAbortAck {
		if room, err = atou(f[1], "room"); err != nil {
			return
		}
		rank, err = atoi(f[2], "prefill rank")
		return MsgAbortAck, room, Failed, rank, err
	}
	if len(f) == 3 {
		if room, err = atou(f[0], "room"); err != nil {
			return
		}
		var s int
		if s, err = atoi(f[1], "status"); err != nil {
			return
		}
		rank, err = atoi(f[2], "prefill rank")
		return MsgStatus, room, KVPoll(s), rank, err
	}
	return MsgUnknown, 0, 0, 0, fmt.Errorf("%w: notice has %d frames", ErrMalformed, len(f))
}
