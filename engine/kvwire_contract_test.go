package engine

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestKVFrameMatchesContract: what the engine writes, contract.ReadKVFrame
// (the relay's reader) splits into the same messages byte for byte, with
// the same header, and refuses what readKV refuses. Two readers of one
// format must not drift apart.
func TestKVFrameMatchesContract(t *testing.T) {
	t.Parallel()
	msgs := []kvMsg{
		{agent: "decode-0", kind: kvChunk, room: 1<<63 + 5, id: 7, last: true, rank: 1, first: 64, pages: []uint32{9, 10}, payload: bytes.Repeat([]byte{3}, 100)},
		{agent: "decode-0", kind: kvAux, room: 1<<63 + 5, rank: 1},
		{agent: "", kind: kvChunk, room: 2},
	}
	var stream []byte
	for _, m := range msgs {
		stream = append(stream, encodeKV(t, m)...)
	}
	r := bytes.NewReader(stream)
	for i, m := range msgs {
		raw, h, err := contract.ReadKVFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(raw, encodeKV(t, m)) {
			t.Fatalf("frame %d: raw bytes differ from what writeKV wrote", i)
		}
		want := contract.KVHeader{Kind: m.kind, Room: m.room, Chunk: m.id, Last: m.last, Rank: m.rank, First: m.first, Pages: uint32(len(m.pages))}
		if h != want {
			t.Fatalf("frame %d: header %+v, want %+v", i, h, want)
		}
	}
	if _, _, err := contract.ReadKVFrame(r); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
	// Cut one message anywhere: the contract reader says unexpected EOF
	// and hands back exactly the bytes it got.
	one := encodeKV(t, msgs[0])
	for cut := 1; cut < len(one); cut++ {
		raw, _, err := contract.ReadKVFrame(bytes.NewReader(one[:cut]))
		if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(raw, one[:cut]) {
			t.Fatalf("cut at %d: err %v, %d bytes back, want unexpected EOF and %d bytes", cut, err, len(raw), cut)
		}
	}
	bad := bytes.Clone(one)
	bad[0] = 9
	if _, _, err := contract.ReadKVFrame(bytes.NewReader(bad)); !errors.Is(err, errKVMalformed) {
		t.Fatalf("unknown kind: %v, want the engine's malformed sentinel", err)
	}
}
