package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(contract.ErrorBody{Error: contract.ErrorDetail{Message: msg, Type: http.StatusText(status), Code: status}})
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
func readJSON(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, maxBodyTail)); err != nil {
		return fmt.Errorf("read the body's end: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
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

// timeNow is the live runtime's clock; the core never reads it itself.
func timeNow() time.Time { return time.Now() }
