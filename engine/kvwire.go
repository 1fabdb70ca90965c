package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/pdchaos/pdchaos/contract"
)

// The KV link wire format, prefill→decode, is described once in
// contract.ReadKVFrame's file (contract/kvwire.go): the engine writes and
// reads it here, a relay on the link (faults/kvlink) parses it there.
const (
	kvChunk = contract.KVKindChunk
	kvAux   = contract.KVKindAux

	kvAccepted = contract.KVReplyAccepted
	kvInactive = contract.KVReplyInactive

	maxKVPayload = contract.MaxKVPayload
	maxKVPages   = contract.MaxKVPages
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

// writeKV writes one KV message. It refuses one readKV would refuse, or
// whose agent name does not fit its u16 length, rather than send a stream
// the peer cannot parse.
func writeKV(w *bufio.Writer, m kvMsg) error {
	switch {
	case m.kind != kvChunk && m.kind != kvAux:
		return fmt.Errorf("write kv message: %w: unknown kind %d", errKVMalformed, m.kind)
	case len(m.pages) > maxKVPages:
		return fmt.Errorf("write kv message: %w: %d pages is over the limit of %d", errKVMalformed, len(m.pages), maxKVPages)
	case len(m.payload) > maxKVPayload:
		return fmt.Errorf("write kv message: %w: payload of %d bytes is over the limit of %d", errKVMalformed, len(m.payload), maxKVPayload)
	case len(m.agent) > math.MaxUint16:
		return fmt.Errorf("write kv message: %w: agent name of %d bytes is over the limit of %d", errKVMalformed, len(m.agent), math.MaxUint16)
	}
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

// errKVMalformed marks a KV message that breaks the wire format: an
// unknown kind or a count over its limit. The stream cannot be resynced
// after one, so the connection is dropped; decode counts it.
var errKVMalformed = contract.ErrKVMalformed

// kvEager is the most readKV allocates for pages or payload before the
// bytes have arrived: a header announcing 64 MiB costs memory only as the
// peer actually sends it.
const kvEager = 64 << 10

// readKV reads one KV message. It returns io.EOF only at a clean end
// between messages; a message cut short is io.ErrUnexpectedEOF, one that
// breaks the format wraps errKVMalformed. Memory grows with the bytes
// received, never with the sizes a header announces.
func readKV(r *bufio.Reader) (kvMsg, error) { return readKVInto(r, nil) }

// kvScratch is a reader's buffers for the messages it reads one at a
// time: pages and payloads of up to kvEager bytes are read into them, so
// a connection's steady stream of chunks allocates nothing per message.
type kvScratch struct {
	raw     []byte
	pages   []uint32
	payload []byte
}

// rawBuf and payloadBuf return a buffer of n bytes for the message's
// page list and payload; nil (for readN to allocate) with no scratch or
// over kvEager.
func (s *kvScratch) rawBuf(n int64) []byte {
	if s == nil {
		return nil
	}
	return grown(&s.raw, n)
}

func (s *kvScratch) payloadBuf(n int64) []byte {
	if s == nil {
		return nil
	}
	return grown(&s.payload, n)
}

func grown(b *[]byte, n int64) []byte {
	if n > kvEager {
		return nil
	}
	if int64(cap(*b)) < n {
		*b = make([]byte, n)
	}
	return (*b)[:n]
}

// readKVInto is readKV reading into s's buffers where it can (s may be
// nil): the message's pages and payload are valid until the next read
// with s.
func readKVInto(r *bufio.Reader, s *kvScratch) (kvMsg, error) {
	var m kvMsg
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return m, err
	}
	m.kind = h[0]
	if m.kind != kvChunk && m.kind != kvAux {
		return m, fmt.Errorf("read kv message: %w: unknown kind %d", errKVMalformed, m.kind)
	}
	m.room = binary.BigEndian.Uint64(h[1:])
	m.id = binary.BigEndian.Uint32(h[9:])
	m.last = h[13] == 1
	m.rank = binary.BigEndian.Uint16(h[14:])
	m.first = binary.BigEndian.Uint32(h[16:])
	n := binary.BigEndian.Uint32(h[20:])
	if n > maxKVPages {
		return m, fmt.Errorf("read kv message: %w: %d pages is over the limit of %d", errKVMalformed, n, maxKVPages)
	}
	raw, err := readNInto(r, int64(n)*4, s.rawBuf(int64(n)*4))
	if err != nil {
		return m, fmt.Errorf("read kv message pages: %w", err)
	}
	if n > 0 {
		if s != nil && cap(s.pages) >= int(n) {
			m.pages = s.pages[:n]
		} else {
			m.pages = make([]uint32, n)
			if s != nil {
				s.pages = m.pages
			}
		}
		for i := range m.pages {
			m.pages[i] = binary.BigEndian.Uint32(raw[4*i:])
		}
	}
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return m, fmt.Errorf("read kv message payload length: %w", unexpected(err))
	}
	pl := binary.BigEndian.Uint32(b[:])
	if pl > maxKVPayload {
		return m, fmt.Errorf("read kv message: %w: payload of %d bytes is over the limit of %d", errKVMalformed, pl, maxKVPayload)
	}
	if m.payload, err = readNInto(r, int64(pl), s.payloadBuf(int64(pl))); err != nil {
		return m, fmt.Errorf("read kv message payload: %w", err)
	}
	var al [2]byte
	if _, err := io.ReadFull(r, al[:]); err != nil {
		return m, fmt.Errorf("read kv message agent length: %w", unexpected(err))
	}
	agent, err := readN(r, int64(binary.BigEndian.Uint16(al[:])))
	if err != nil {
		return m, fmt.Errorf("read kv message agent: %w", err)
	}
	m.agent = string(agent)
	return m, nil
}

// readN reads exactly n bytes, allocating at most kvEager ahead of what
// has arrived; a short read is io.ErrUnexpectedEOF.
func readN(r io.Reader, n int64) ([]byte, error) {
	if n <= kvEager {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, unexpected(err)
	}
	var buf bytes.Buffer
	buf.Grow(kvEager)
	if _, err := io.CopyN(&buf, r, n); err != nil {
		return nil, unexpected(err)
	}
	return buf.Bytes(), nil
}

// readNInto is readN into b when b is not nil (it holds exactly n bytes).
func readNInto(r io.Reader, n int64, b []byte) ([]byte, error) {
	if b == nil {
		return readN(r, n)
	}
	_, err := io.ReadFull(r, b)
	return b, unexpected(err)
}

// unexpected turns io.EOF inside a message into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
