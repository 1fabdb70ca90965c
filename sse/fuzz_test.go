package sse_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/sse"
)

// fuzzMax is the event limit the fuzz targets read with: small, so inputs
// of a few KiB reach it.
const fuzzMax = 256

// readEvents reads every event of in with limit max, and the error that ended
// the stream.
func readEvents(in []byte, max int) ([][]byte, error) {
	r := sse.NewReader(bytes.NewReader(in), max)
	var evs [][]byte
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// encode writes events as a server would: one data line per line of the
// event, CRLF endings (so a data line that ends in CR survives), a blank
// line after each, and [DONE] when the stream ended with it.
func encode(evs [][]byte, done bool) []byte {
	var b []byte
	for _, ev := range evs {
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			b = append(append(append(b, "data: "...), line...), "\r\n"...)
		}
		b = append(b, "\r\n"...)
	}
	if done {
		b = append(b, "data: [DONE]\n\n"...)
	}
	return b
}

// FuzzReader reads any byte stream as server-sent events: no panic; no
// event over the reader's limit is delivered; memory grows with the input,
// not beyond it (a line over the limit is refused, not buffered); and the
// events read, re-encoded, read back equal and end the same way.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		": keep-alive\r\nevent: message\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\ndata: [DONE]\r\n\r\n",
		"data:x\n\ndata: x\r\r\n\n",
		"data: " + strings.Repeat("y", fuzzMax+1) + "\n\n",
		"data: cut",
		"retry: 10\n\ndata\n\ndata: [DONE]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var evs [][]byte
		var err error
		alloc := testkit.AllocatedBy(func() { evs, err = readEvents(in, fuzzMax) })
		if limit := uint64(4096 + 4*len(in) + 64<<10); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d, limit %d", len(in), alloc, limit)
		}
		for _, ev := range evs {
			if len(ev) > fuzzMax || len(ev) == 0 {
				t.Fatalf("event of %d bytes delivered (limit %d)", len(ev), fuzzMax)
			}
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, sse.ErrTruncated) && !errors.Is(err, sse.ErrTooLarge) {
			t.Fatalf("stream ended with %v", err)
		}
		if errors.Is(err, sse.ErrTooLarge) {
			return // the stream was refused where it went over; nothing to re-encode
		}
		again, err2 := readEvents(encode(evs, errors.Is(err, io.EOF)), fuzzMax)
		if !slices.EqualFunc(again, evs, bytes.Equal) || !errors.Is(err2, err) {
			t.Fatalf("events %q (%v) re-encoded read as %q (%v)", evs, err, again, err2)
		}
	})
}

// endless is a reader that never ends and counts what was read from it.
type endless struct {
	b byte
	n int
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.b
	}
	e.n += len(p)
	return len(p), nil
}

// A server that sends one endless line, or one endless event of short
// lines, is refused after the reader has read about its limit, never the
// whole stream.
func TestReaderBoundsEndlessInput(t *testing.T) {
	t.Parallel()
	const max = 1 << 16
	for _, tc := range []struct {
		name string
		line []byte
	}{
		{"line", []byte("a")},
		{"event", []byte("data: xxxxxxxx\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &repeater{line: tc.line}
			_, err := sse.NewReader(io.MultiReader(strings.NewReader("data: "), src), max).Next()
			if !errors.Is(err, sse.ErrTooLarge) {
				t.Fatalf("endless %s: %v, want ErrTooLarge", tc.name, err)
			}
			if src.n > 2*max+8192 {
				t.Fatalf("endless %s: read %d bytes before refusing it (limit %d)", tc.name, src.n, max)
			}
		})
	}
}

// repeater repeats line forever and counts the bytes read from it.
type repeater struct {
	line []byte
	n    int
}

func (r *repeater) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.line[(r.n+i)%len(r.line)]
	}
	r.n += len(p)
	return len(p), nil
}
