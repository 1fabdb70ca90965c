package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// KV link wire format, prefill→decode, one request/one reply at a time per
// connection (the reply is the write's completion, like an RDMA completion):
//
//	u8 kind (1 chunk, 2 aux) | u64 room | u32 chunk id | u8 last | u16 rank |
//	u32 first token | u32 n pages | n × u32 page | u32 payload len | payload |
//	u16 agent len | agent (the decode agent whose pages these are)
//
// Reply: u8 (0 accepted, 1 room inactive on decode).
const (
	kvChunk = 1
	kvAux   = 2

	kvAccepted = 0
	kvInactive = 1

	maxKVPayload = 64 << 20
	maxKVPages   = 1 << 20
)

type kvMsg struct {
	agent   string // destination agent (decode rank registration)
	kind    byte
	room    uint64
	id      uint32
	last    bool
	rank    uint16
	first   uint32
	pages   []uint32
	payload []byte
}

func writeKV(w *bufio.Writer, m kvMsg) error {
	var h [24]byte
	h[0] = m.kind
	binary.BigEndian.PutUint64(h[1:], m.room)
	binary.BigEndian.PutUint32(h[9:], m.id)
	if m.last {
		h[13] = 1
	}
	binary.BigEndian.PutUint16(h[14:], m.rank)
	binary.BigEndian.PutUint32(h[16:], m.first)
	binary.BigEndian.PutUint32(h[20:], uint32(len(m.pages)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	var b [4]byte
	for _, p := range m.pages {
		binary.BigEndian.PutUint32(b[:], p)
		if _, err := w.Write(b[:]); err != nil {
			return err
		}
	}
	binary.BigEndian.PutUint32(b[:], uint32(len(m.payload)))
	if _, err := w.Write(b[:]); err != nil {
		return err
	}
	if _, err := w.Write(m.payload); err != nil {
		return err
	}
	var al [2]byte
	binary.BigEndian.PutUint16(al[:], uint16(len(m.agent)))
	if _, err := w.Write(al[:]); err != nil {
		return err
	}
	if _, err := w.WriteString(m.agent); err != nil {
		return err
	}
	return w.Flush()
}

func readKV(r *bufio.Reader) (kvMsg, error) {
	var m kvMsg
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return m, err
	}
	m.kind = h[0]
	if m.kind != kvChunk && m.kind != kvAux {
		return m, fmt.Errorf("read kv message: unknown kind %d", m.kind)
	}
	m.room = binary.BigEndian.Uint64(h[1:])
	m.id = binary.BigEndian.Uint32(h[9:])
	m.last = h[13] == 1
	m.rank = binary.BigEndian.Uint16(h[14:])
	m.first = binary.BigEndian.Uint32(h[16:])
	n := binary.BigEndian.Uint32(h[20:])
	if n > maxKVPages {
		return m, fmt.Errorf("read kv message: %d pages is too many", n)
	}
	var b [4]byte
	m.pages = make([]uint32, n)
	for i := range m.pages {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return m, err
		}
		m.pages[i] = binary.BigEndian.Uint32(b[:])
	}
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return m, err
	}
	pl := binary.BigEndian.Uint32(b[:])
	if pl > maxKVPayload {
		return m, fmt.Errorf("read kv message: payload of %d bytes is too large", pl)
	}
	m.payload = make([]byte, pl)
	if _, err := io.ReadFull(r, m.payload); err != nil {
		return m, err
	}
	var al [2]byte
	if _, err := io.ReadFull(r, al[:]); err != nil {
		return m, err
	}
	agent := make([]byte, binary.BigEndian.Uint16(al[:]))
	_, err := io.ReadFull(r, agent)
	m.agent = string(agent)
	return m, err
}
