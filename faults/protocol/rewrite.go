package protocol

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
)

// ErrNotRewritable says a decode→prefill message that may carry decode's
// notify address could not be rewritten: its layout is unknown, or the
// address frames do not parse. Such a message is counted, never passed on
// as if it had been rewritten.
var ErrNotRewritable = errors.New("decode address not rewritable")

// DecodeAddrAt returns the indexes of the ip and port frames that carry
// decode's notify address (where prefill sends status, ABORT_ACK and
// KV_STATUS) in a classified decode→prefill message, per dialect
// (sglang-wire.md §3):
//
//	NIXL registration:     NixlMsgGuard, None, ip, port, …  → 2, 3
//	NIXL TransferInfo:     NixlMsgGuard, room, ip, port, …  → 2, 3
//	Mooncake registration: None, ip, port, session_id, …    → 1, 2
//	Mooncake TransferInfo: room, ip, port, session_id, …    → 1, 2
//	ABORT:                 ABORT, room, decode_ip, decode_port[, …] → 2, 3
//
// carries is false for kinds that hold no decode address (ack, status,
// aux, staging). KindUnknown is an error: it may carry one, nobody knows
// where. Mooncake's session_id is the transfer engine's own address (RDMA),
// not the ZMQ socket, and is left alone.
func DecodeAddrAt(m Message) (ipAt, portAt int, carries bool, err error) {
	f := m.Frames
	switch m.Kind {
	case KindRegistration, KindMetadata:
		if len(f) > 0 && string(f[0]) == GuardFrame {
			ipAt, portAt = 2, 3
		} else {
			ipAt, portAt = 1, 2
		}
	case KindAbort:
		ipAt, portAt = 2, 3
	case KindUnknown:
		return 0, 0, false, fmt.Errorf("%w: message of %d frames has no known layout", ErrNotRewritable, len(f))
	default:
		return 0, 0, false, nil
	}
	if portAt >= len(f) {
		return 0, 0, false, fmt.Errorf("%w: %s of %d frames has no port frame", ErrNotRewritable, m.Kind, len(f))
	}
	if p, err := strconv.Atoi(string(f[portAt])); err != nil || p <= 0 || p > 65535 {
		return 0, 0, false, fmt.Errorf("%w: %s port frame %.20q is not a port", ErrNotRewritable, m.Kind, f[portAt])
	}
	if len(f[ipAt]) == 0 || len(f[ipAt]) > 255 {
		return 0, 0, false, fmt.Errorf("%w: %s ip frame of %d bytes", ErrNotRewritable, m.Kind, len(f[ipAt]))
	}
	return ipAt, portAt, true, nil
}

// RewriteDecodeAddr returns m's frames with decode's notify address
// replaced by to(from), where from is the "ip:port" the message carried.
// changed is false (and frames are m's own) when the kind carries no
// address. An error (wrapping ErrNotRewritable, or to's error) means the
// message must not be passed on as rewritten; the caller counts it.
func RewriteDecodeAddr(m Message, to func(from string) (string, error)) (frames [][]byte, changed bool, err error) {
	ipAt, portAt, carries, err := DecodeAddrAt(m)
	if err != nil || !carries {
		return m.Frames, false, err
	}
	from := net.JoinHostPort(string(m.Frames[ipAt]), string(m.Frames[portAt]))
	via, err := to(from)
	if err != nil {
		return m.Frames, false, fmt.Errorf("rewrite %s from %s: %w", m.Kind, from, err)
	}
	host, port, err := net.SplitHostPort(via)
	if err != nil {
		return m.Frames, false, fmt.Errorf("rewrite %s from %s to %q: %w", m.Kind, from, via, err)
	}
	out := slices.Clone(m.Frames)
	out[ipAt], out[portAt] = []byte(host), []byte(port)
	return out, true, nil
}
