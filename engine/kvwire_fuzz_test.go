package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// allocSlack absorbs allocations of the runtime and the fuzzing engine
// that testkit.AllocatedBy cannot tell from the parser's own.
const allocSlack = 256 << 10

func encodeKV(t testing.TB, msgs ...kvMsg) []byte {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	for _, m := range msgs {
		if err := writeKV(w, m); err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
	}
	return b.Bytes()
}

func sameKV(a, b kvMsg) bool {
	return a.agent == b.agent && a.kind == b.kind && a.room == b.room && a.id == b.id && a.last == b.last &&
		a.rank == b.rank && a.first == b.first && slices.Equal(a.pages, b.pages) && bytes.Equal(a.payload, b.payload)
}

func seedKV(f *testing.F) {
	tok := bytes.Repeat([]byte{7}, model.KVBytesPerToken)
	f.Add(encodeKV(f, kvMsg{agent: "decode-0", kind: kvChunk, room: 42, id: 0, rank: 0, first: 0, pages: []uint32{3}, payload: tok}))
	f.Add(encodeKV(f,
		kvMsg{agent: "127.0.0.1:17001", kind: kvChunk, room: 42, id: 1, last: true, first: 16, pages: []uint32{4, 5}, payload: slices.Concat(tok, tok)},
		kvMsg{agent: "127.0.0.1:17001", kind: kvAux, room: 42}))
	f.Add(encodeKV(f, kvMsg{agent: "decode-0", kind: kvChunk, room: 1, pages: []uint32{3}, payload: tok[:5]})) // not whole tokens
	// Headers announcing the most pages and payload allowed, with nothing after.
	f.Add([]byte{kvChunk, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0})
	f.Add(append([]byte{kvChunk, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0x04, 0, 0, 0))
	f.Add([]byte{9, 1, 2, 3})
}

// FuzzReadKV feeds decode's KV listener any byte stream, as a hostile or
// broken prefill would: no panic; memory grows with the bytes received,
// never with the sizes a header announces (a 64 MiB payload header costs
// at most kvEager until the bytes arrive); every message read re-encodes
// to one that reads back equal; and applying it to a decode, as serveKV
// does, never panics.
func FuzzReadKV(f *testing.F) {
	seedKV(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var msgs []kvMsg
		var last error
		alloc := testkit.AllocatedBy(func() {
			r := bufio.NewReader(bytes.NewReader(in))
			for {
				m, err := readKV(r)
				if err != nil {
					last = err
					return
				}
				msgs = append(msgs, m)
			}
		})
		if limit := uint64(4*kvEager + 8*len(in) + allocSlack); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d, limit %d", len(in), alloc, limit)
		}
		if !errors.Is(last, io.EOF) && !errors.Is(last, io.ErrUnexpectedEOF) && !errors.Is(last, errKVMalformed) {
			t.Fatalf("stream ended with %v: neither EOF, truncation nor malformed", last)
		}
		// serveKV's reads, through one scratch: the same messages, each
		// whole until the next read, and the same end.
		var scratch kvScratch
		r := bufio.NewReader(bytes.NewReader(in))
		for i := 0; ; i++ {
			m, err := readKVInto(r, &scratch)
			if err != nil {
				if i != len(msgs) || err.Error() != last.Error() {
					t.Fatalf("with a scratch: message %d ends with %v, want %d messages then %v", i, err, len(msgs), last)
				}
				break
			}
			if i >= len(msgs) || !sameKV(m, msgs[i]) {
				t.Fatalf("with a scratch: message %d reads as %+v", i, m)
			}
		}
		d := core.NewDecode(core.DecodeConfig{Pages: 64}, nil)
		now := time.Unix(0, 0)
		for _, m := range msgs {
			back, err := readKV(bufio.NewReader(bytes.NewReader(encodeKV(t, m))))
			if err != nil || !sameKV(back, m) {
				t.Fatalf("%+v re-encoded reads as %+v (%v)", m, back, err)
			}
			if m.kind == kvChunk {
				d.OnChunk(now, 0, m.room, int(m.id), m.last, m.pages, int(m.first), m.payload)
			} else {
				d.OnAux(now, 0, m.room)
			}
		}
	})
}

// FuzzWriteKV builds KV chunks and completion notices (aux) from fuzzed
// fields: readKV(writeKV(m)) == m.
func FuzzWriteKV(f *testing.F) {
	f.Add(true, uint64(42), uint32(3), true, uint16(0), uint32(16), []byte{0, 0, 0, 4}, []byte("kv"), "decode-0")
	f.Add(false, uint64(1<<63), uint32(0), false, uint16(7), uint32(0), []byte{}, []byte{}, "10.1.2.3:17001")
	f.Fuzz(func(t *testing.T, chunk bool, room uint64, id uint32, last bool, rank uint16, first uint32, pages, payload []byte, agent string) {
		m := kvMsg{agent: agent, kind: kvAux, room: room, id: id, last: last, rank: rank, first: first, payload: payload}
		if chunk {
			m.kind = kvChunk
		}
		for i := 0; i+4 <= len(pages); i += 4 {
			m.pages = append(m.pages, uint32(pages[i])<<24|uint32(pages[i+1])<<16|uint32(pages[i+2])<<8|uint32(pages[i+3]))
		}
		back, err := readKV(bufio.NewReader(bytes.NewReader(encodeKV(t, m))))
		if err != nil || !sameKV(back, m) {
			t.Fatalf("%+v reads back as %+v (%v)", m, back, err)
		}
	})
}

// writeKV refuses what readKV would refuse, and an agent name too long for
// its u16 length, instead of sending a stream the peer cannot parse.
func TestWriteKVRefusesUnencodable(t *testing.T) {
	t.Parallel()
	for _, m := range []kvMsg{
		{kind: 3},
		{kind: kvChunk, agent: strings.Repeat("a", 1<<16)},
		{kind: kvChunk, pages: make([]uint32, maxKVPages+1)},
	} {
		var b bytes.Buffer
		if err := writeKV(bufio.NewWriter(&b), m); !errors.Is(err, errKVMalformed) || b.Len() != 0 {
			t.Errorf("kind %d, agent %d bytes, %d pages: %v, %d bytes written", m.kind, len(m.agent), len(m.pages), err, b.Len())
		}
	}
}

// A header announcing the largest payload allowed costs memory only as the
// bytes arrive: cut short after 100 bytes, the read allocates about
// kvEager, not 64 MiB.
func TestReadKVAllocatesAsBytesArrive(t *testing.T) {
	hdr := []byte{kvChunk, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0, 0, 0}
	in := append(hdr, make([]byte, 100)...)
	var err error
	alloc := testkit.AllocatedBy(func() { _, err = readKV(bufio.NewReader(bytes.NewReader(in))) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut payload: %v, want io.ErrUnexpectedEOF", err)
	}
	if alloc > 4*kvEager+allocSlack {
		t.Fatalf("a cut 64 MiB payload allocated %d bytes", alloc)
	}
}
