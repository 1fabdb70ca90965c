package engine

import (
	"encoding/json"
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
