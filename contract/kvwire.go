package contract

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// KV link wire format, prefill→decode, one message and one reply at a time
// per connection (the reply is the write's completion, like an RDMA
// completion):
//
//	u8 kind (1 chunk, 2 aux) | u64 room | u32 chunk id | u8 last | u16 rank |
//	u32 first token | u32 n pages | n × u32 page | u32 payload len | payload |
//	u16 agent len | agent (the decode agent whose pages these are)
//
// Reply: u8 (0 accepted, 1 room inactive on decode). A chunk with the last
// flag is followed on the same connection by the rank's aux message (the
// completion notice) once its reply came back.
//
// The engine writes and reads it; a relay on a KV link (faults/kvlink)
// parses it with ReadKVFrame, so both sides share this one description.
const (
	KVKindChunk byte = 1
	KVKindAux   byte = 2

	KVReplyAccepted byte = 0
	KVReplyInactive byte = 1

	// KVHeaderLen is the fixed header: kind to n pages.
	KVHeaderLen = 24
	// MaxKVPayload and MaxKVPages bound one message; a header announcing
	// more is malformed.
	MaxKVPayload = 64 << 20
	MaxKVPages   = 1 << 20
)

// KVMessageLen is the wire length of a KV message with pages pages, a
// payload of payload bytes and an agent name of agent bytes, as the format
// above lays it out (an aux message has none of the first two): what a
// byte-counting fault on the link sees of it.
func KVMessageLen(pages, payload, agent int) int {
	return KVHeaderLen + 4*pages + 4 + payload + 2 + agent
}

// ErrKVMalformed marks a KV message that breaks the wire format: an
// unknown kind or a count over its limit. The stream cannot be resynced
// after one.
var ErrKVMalformed = errors.New("malformed kv message")

// KVHeader is the fixed part of a KV message.
type KVHeader struct {
	Kind  byte
	Room  uint64
	Chunk uint32
	Last  bool
	Rank  uint16
	First uint32
	Pages uint32
}

// ParseKVHeader decodes and checks a message's fixed header.
func ParseKVHeader(h []byte) (KVHeader, error) {
	if len(h) < KVHeaderLen {
		return KVHeader{}, fmt.Errorf("parse kv header: %w: %d bytes, want %d", ErrKVMalformed, len(h), KVHeaderLen)
	}
	k := KVHeader{Kind: h[0], Room: binary.BigEndian.Uint64(h[1:]), Chunk: binary.BigEndian.Uint32(h[9:]),
		Last: h[13] == 1, Rank: binary.BigEndian.Uint16(h[14:]), First: binary.BigEndian.Uint32(h[16:]),
		Pages: binary.BigEndian.Uint32(h[20:])}
	if k.Kind != KVKindChunk && k.Kind != KVKindAux {
		return k, fmt.Errorf("parse kv header: %w: unknown kind %d", ErrKVMalformed, k.Kind)
	}
	if k.Pages > MaxKVPages {
		return k, fmt.Errorf("parse kv header: %w: %d pages is over the limit of %d", ErrKVMalformed, k.Pages, MaxKVPages)
	}
	return k, nil
}

// kvEager is the most ReadKVFrame buffers ahead of the bytes that have
// arrived: a header announcing 64 MiB costs memory only as it is sent.
const kvEager = 64 << 10

// ReadKVFrame reads one whole KV message from r as raw bytes, with its
// header decoded, for a relay that forwards it unchanged. It returns io.EOF
// only at a clean end between messages; a message cut short is
// io.ErrUnexpectedEOF and one that breaks the format wraps ErrKVMalformed.
// On any error raw holds the bytes read so far, so a relay can pass the
// broken stream on exactly as it came. Memory grows with the bytes
// received, never with the sizes a header announces.
func ReadKVFrame(r io.Reader) (raw []byte, h KVHeader, err error) {
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, KVHeaderLen); err != nil {
		if buf.Len() > 0 {
			err = kvUnexpected(err)
		}
		return buf.Bytes(), h, err
	}
	if h, err = ParseKVHeader(buf.Bytes()); err != nil {
		return buf.Bytes(), h, err
	}
	if err := kvCopy(&buf, r, int64(h.Pages)*4+4); err != nil {
		return buf.Bytes(), h, fmt.Errorf("read kv pages: %w", err)
	}
	pl := binary.BigEndian.Uint32(buf.Bytes()[buf.Len()-4:])
	if pl > MaxKVPayload {
		return buf.Bytes(), h, fmt.Errorf("read kv frame: %w: payload of %d bytes is over the limit of %d", ErrKVMalformed, pl, MaxKVPayload)
	}
	if err := kvCopy(&buf, r, int64(pl)+2); err != nil {
		return buf.Bytes(), h, fmt.Errorf("read kv payload: %w", err)
	}
	al := binary.BigEndian.Uint16(buf.Bytes()[buf.Len()-2:])
	if err := kvCopy(&buf, r, int64(al)); err != nil {
		return buf.Bytes(), h, fmt.Errorf("read kv agent: %w", err)
	}
	return buf.Bytes(), h, nil
}

// kvCopy appends exactly n bytes of r to buf, growing it at most kvEager
// ahead of what arrived.
func kvCopy(buf *bytes.Buffer, r io.Reader, n int64) error {
	buf.Grow(int(min(n, kvEager)))
	_, err := io.CopyN(buf, r, n)
	return kvUnexpected(err)
}

func kvUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
