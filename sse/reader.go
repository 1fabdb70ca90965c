package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Done is the data of the event that ends an OpenAI-style stream.
const Done = "[DONE]"

// DefaultMaxEvent bounds one event's data when NewReader is given no limit:
// 16 MiB, enough for a /generate chunk that repeats a long answer so far.
const DefaultMaxEvent = 16 << 20

// ErrTruncated means the stream ended cleanly at the transport level (EOF)
// before its [DONE] event: the server stopped early. Streams that carry no
// [DONE] end with it too, so such a caller treats it as a normal end.
var ErrTruncated = errors.New("sse: stream ended without " + Done)

// ErrTooLarge means one event's data (or one line) was larger than the
// reader's limit; Next wraps it with the limit.
var ErrTooLarge = errors.New("sse: event too large")

// Reader reads the data of one event at a time from a text/event-stream.
//
// Lines end in LF or CRLF. A line starting with ':' is a comment (a
// keep-alive) and is skipped, as are the event, id and retry fields and
// unknown fields. The data lines of one event are joined with '\n' and the
// event is delivered at the blank line that ends it; an event with no data
// is not delivered. At the end of the stream, the data read so far is still
// delivered before the error (a last line without its newline counts at a
// clean EOF), so a server that forgets the final blank line loses nothing.
type Reader struct {
	br      *bufio.Reader
	max     int
	data    []byte // the pending event's data
	hasData bool   // a data field was seen for the pending event
	eof     bool   // the underlying reader is at a clean EOF
	err     error  // sticky: returned once the pending event is delivered
}

// NewReader reads events from r; max bounds one event's data in bytes
// (0 or less means DefaultMaxEvent).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxEvent
	}
	return &Reader{br: bufio.NewReaderSize(r, 4096), max: max}
}

// Next returns the data of the next event; the caller may keep the slice.
// Next returns io.EOF once the [DONE] event has been read (and
// on every call after it), ErrTruncated when the stream ends before [DONE],
// an error wrapping ErrTooLarge when an event is over the limit, and any
// other read error unchanged (io.ErrUnexpectedEOF from a cut HTTP body,
// context.Canceled from a cancelled request).
func (r *Reader) Next() ([]byte, error) {
	for r.err == nil {
		line, err := r.readLine()
		if err != nil {
			r.fail(err)
			break
		}
		if len(line) == 0 {
			if ev, ok := r.take(); ok {
				return r.deliver(ev)
			}
			continue
		}
		if err := r.field(line); err != nil {
			r.fail(err)
		}
	}
	if ev, ok := r.take(); ok {
		return r.deliver(ev)
	}
	return nil, r.err
}

// fail ends the stream with err; an event over the limit is dropped whole,
// never delivered in part.
func (r *Reader) fail(err error) {
	r.err = err
	if errors.Is(err, ErrTooLarge) {
		r.data, r.hasData = nil, false
	}
}

// deliver hands ev to the caller unless it is [DONE], which ends the stream.
func (r *Reader) deliver(ev []byte) ([]byte, error) {
	if string(bytes.TrimSpace(ev)) == Done {
		r.err = io.EOF
		r.data, r.hasData = r.data[:0], false
		return nil, io.EOF
	}
	return ev, nil
}

// take returns the pending event, if its data is not empty, and starts a
// new one.
func (r *Reader) take() ([]byte, bool) {
	if !r.hasData {
		return nil, false
	}
	ev := r.data
	r.data, r.hasData = nil, false
	return ev, len(ev) > 0
}

// field applies one non-blank line to the pending event.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment: a keep-alive
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if string(name) != "data" {
		return nil // event, id, retry and unknown fields carry nothing we read
	}
	if found {
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	if len(r.data)+len(value) > r.max {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.max)
	}
	r.data = append(r.data, value...)
	r.hasData = true
	return nil
}

// readLine returns the next line without its line ending. A last line
// without a newline is returned at a clean EOF; at any other read error it
// is dropped (it may be cut anywhere). At the end of the stream it returns
// ErrTruncated, or the read error.
func (r *Reader) readLine() ([]byte, error) {
	if r.eof {
		return nil, ErrTruncated
	}
	var long []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > r.max+maxOverhead {
				return nil, fmt.Errorf("%w: a line of more than %d bytes", ErrTooLarge, r.max)
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
		}
		switch {
		case err == nil:
			return trimEOL(line), nil
		case errors.Is(err, io.EOF):
			r.eof = true
			if len(line) > 0 {
				return trimEOL(line), nil // the next call reports the end
			}
			return nil, ErrTruncated
		default:
			return nil, err
		}
	}
}

// maxOverhead is what a line may hold beyond its data: the field name, the
// colon, a space and the line ending.
const maxOverhead = len("data: ") + len("\r\n")

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
