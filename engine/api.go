package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"

	"github.com/pdchaos/pdchaos/contract"
)

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(contract.ErrorBody{Error: contract.ErrorDetail{Message: msg, Type: http.StatusText(status), Code: status}})
}

// maxRequestBody bounds the JSON body of a request to any role: a prompt
// of a million words is well under it, and a client that sends more gets
// a 413 instead of the process's memory.
const maxRequestBody = 32 << 20

// badBody answers a body readJSON refused: 413 when it was too large, else
// 400 ("decode WHAT: why"), what naming the body.
func badBody(w http.ResponseWriter, what string, err error) {
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s: larger than %d bytes", what, tooLarge.Limit))
		return
	}
	writeError(w, http.StatusBadRequest, "decode "+what+": "+err.Error())
}

// maxBodyTail bounds what readJSON drains after the value: a JSON body's
// trailing whitespace, never a second payload worth reading.
const maxBodyTail = 64 << 10

// readJSON decodes r's body into v and reads the body to its end. Go's
// server notices a client that goes away (and cancels r.Context()) only
// once the handler has hit the body's EOF; a decoder stops at the value's
// last byte, so a body whose tail (json.Encoder's newline, a chunked
// body's last chunk) came in a later read left the client's cancel unseen
// until the handler returned: a generate run to its end for nobody.
// The body is cut at maxRequestBody (w closes the connection then).
//
// v must be a pointer to a zero value. A body under maxBodyTail bytes (every
// request the engine's roles send each other) is read whole in one buffer
// sized by its Content-Length and unmarshalled from there; when that fails
// (not one JSON value, or trailing bytes a decoder leaves unread) v is
// zeroed and the body decoded as a stream from its bytes, so what v holds
// and the error are the decoder's whatever the path.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
	size := 512
	if r.ContentLength >= 0 && r.ContentLength < maxBodyTail {
		size = int(r.ContentLength) + 1 // room to read the EOF
	}
	buf := make([]byte, 0, size)
	head := io.LimitReader(r.Body, maxBodyTail)
	var readErr error
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := head.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	var rest io.Reader
	switch {
	case readErr != nil:
		rest = errReader{readErr}
	case len(buf) == maxBodyTail:
		rest = r.Body // perhaps more: the head was all that was read
	default:
		if g, ok := v.(*contract.GenerateRequest); ok && parseGenerateRequest(buf, g) {
			return nil // the router's own layout, read without reflection
		}
		if json.Unmarshal(buf, v) == nil {
			return nil
		}
		reflect.ValueOf(v).Elem().SetZero()
	}
	src := io.Reader(bytes.NewReader(buf))
	if rest != nil {
		src = io.MultiReader(src, rest)
	}
	return decodeJSONStream(src, v)
}

// decodeJSONStream decodes the first JSON value of body into v, then reads up
// to maxBodyTail more bytes of it.
func decodeJSONStream(body io.Reader, v any) error {
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(body, maxBodyTail)); err != nil {
		return fmt.Errorf("read the body's end: %w", err)
	}
	return nil
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if c, ok := v.(contract.GenerateChunk); ok {
		// Prefill's and decode's answer: json.Encoder's bytes, written
		// without reflection where its strings allow.
		if b, ok := appendGenerateChunk(make([]byte, 0, 256+len(c.Text)), c); ok {
			_, _ = w.Write(append(b, '\n'))
			return
		}
	}
	_ = json.NewEncoder(w).Encode(v)
}

// loopbackOnly refuses debug endpoints to anything but loopback callers:
// they expose internal state and can pause the engine.
func loopbackOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			writeError(w, http.StatusForbidden, "debug endpoints answer loopback callers only")
			return
		}
		h(w, r)
	}
}
