package sse_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pdchaos/pdchaos/sse"
)

// readAll reads events until Next fails and returns them with the error.
func readAll(r io.Reader, max int) ([]string, error) {
	rd := sse.NewReader(r, max)
	var out []string
	for {
		data, err := rd.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream string
		max    int
		want   []string
		err    error
	}{
		{"done", "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n", 0, []string{`{"a":1}`, `{"a":2}`}, io.EOF},
		{"nothing after done is read", "data: a\n\ndata: [DONE]\n\ndata: b\n\n", 0, []string{"a"}, io.EOF},
		{"done with spaces", "data:  [DONE] \n\n", 0, nil, io.EOF},
		{"no space after the colon", "data:x\n\ndata:[DONE]\n\n", 0, []string{"x"}, io.EOF},
		{"only one leading space is removed", "data:  x\n\n", 0, []string{" x"}, sse.ErrTruncated},
		{"multi-line data", "data: line one\ndata: line two\n\ndata: [DONE]\n\n", 0, []string{"line one\nline two"}, io.EOF},
		{"comments and keep-alives", ": keep-alive\n\n:\ndata: x\n: between\n\ndata: [DONE]\n\n", 0, []string{"x"}, io.EOF},
		{"other fields ignored", "event: chunk\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\ndata: [DONE]\n\n", 0, []string{"x"}, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\ndata: c\r\n\r\ndata: [DONE]\r\n\r\n", 0, []string{"a", "b\nc"}, io.EOF},
		{"empty data is not an event", "data:\n\ndata: x\n\ndata: [DONE]\n\n", 0, []string{"x"}, io.EOF},
		{"blank lines alone are no events", "\n\n\ndata: x\n\n\n\ndata: [DONE]\n\n", 0, []string{"x"}, io.EOF},
		{"ends without done", "data: a\n\ndata: b\n\n", 0, []string{"a", "b"}, sse.ErrTruncated},
		{"empty stream", "", 0, nil, sse.ErrTruncated},
		{"last event without its blank line", "data: a\n\ndata: b\n", 0, []string{"a", "b"}, sse.ErrTruncated},
		{"last line without its newline", "data: a\n\ndata: b", 0, []string{"a", "b"}, sse.ErrTruncated},
		{"done without its newline", "data: a\n\ndata: [DONE]", 0, []string{"a"}, io.EOF},
		{"event at the limit", "data: 123456\n\ndata: [DONE]\n\n", 6, []string{"123456"}, io.EOF},
		{"event over the limit", "data: ok\n\ndata: 1234567\n\ndata: [DONE]\n\n", 6, []string{"ok"}, sse.ErrTooLarge},
		{"multi-line event over the limit", "data: 123\ndata: 456\n\n", 6, nil, sse.ErrTooLarge},
		{"long line over the limit", "data: " + strings.Repeat("x", 10000) + "\n\n", 5000, nil, sse.ErrTooLarge},
		{"long line under the limit", "data: " + strings.Repeat("x", 10000) + "\n\ndata: [DONE]\n\n", 0, []string{strings.Repeat("x", 10000)}, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAll(strings.NewReader(tc.stream), tc.max)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReaderOneByteAtATime reads a stream split at every byte, as a slow
// network delivers it.
func TestReaderOneByteAtATime(t *testing.T) {
	t.Parallel()
	stream := ": hi\r\ndata: a\r\ndata: b\r\n\r\ndata: " + strings.Repeat("y", 9000) + "\n\ndata: [DONE]\n\n"
	got, err := readAll(iotest.OneByteReader(strings.NewReader(stream)), 0)
	if err != io.EOF || len(got) != 2 || got[0] != "a\nb" || got[1] != strings.Repeat("y", 9000) {
		t.Fatalf("events %q, error %v", got, err)
	}
}

// TestReaderReadErrors: a read error other than EOF comes back unchanged
// (the router reports "decode stream ended early: unexpected EOF"), after
// the complete lines read before it; a line cut by the error is dropped.
func TestReaderReadErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream string
		cause  error
		want   []string
	}{
		{"cut between events", "data: a\n\n", io.ErrUnexpectedEOF, []string{"a"}},
		{"cut before the blank line", "data: a\n\ndata: b\n", io.ErrUnexpectedEOF, []string{"a", "b"}},
		{"cut inside a line", "data: a\n\ndata: {\"text\":", io.ErrUnexpectedEOF, []string{"a"}},
		{"cancelled", "data: a\n\n", context.Canceled, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := io.MultiReader(strings.NewReader(tc.stream), iotest.ErrReader(tc.cause))
			got, err := readAll(r, 0)
			if err != tc.cause {
				t.Fatalf("error %v, want %v unchanged", err, tc.cause)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReaderIsSticky: after the end, Next keeps saying why it ended.
func TestReaderIsSticky(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stream string
		want   error
	}{{"data: [DONE]\n\n", io.EOF}, {"data: a\n\n", sse.ErrTruncated}} {
		rd := sse.NewReader(strings.NewReader(tc.stream), 0)
		for i := range 4 {
			data, err := rd.Next()
			if err == nil {
				continue
			}
			if data != nil || err != tc.want {
				t.Fatalf("%q: call %d: %q, %v; want %v", tc.stream, i, data, err, tc.want)
			}
		}
	}
}
