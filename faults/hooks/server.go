package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/pdchaos/pdchaos/engine"
)

// ServeHooks exposes h over HTTP: GET returns every gate as JSON
// []engine.HookState; POST takes a Request. Unknown hooks answer 404, bad
// requests 400, other failures 500, each with {"error": "..."}. Requests from
// a non-loopback address get 403: pausing an engine is not for the network.
func ServeHooks(h engine.Hooks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback(r.RemoteAddr) {
			writeErr(w, http.StatusForbidden, fmt.Errorf("%s is loopback-only", Path))
			return
		}
		switch r.Method {
		case http.MethodGet:
			states, err := h.State(r.Context())
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			if states == nil {
				states = []engine.HookState{}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(states)
		case http.MethodPost:
			var req Request
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				writeErr(w, http.StatusBadRequest, fmt.Errorf("decode request: %w", err))
				return
			}
			var err error
			switch req.Action {
			case ActionPause:
				err = h.Pause(r.Context(), req.Spec)
			case ActionResume:
				err = h.Resume(r.Context(), req.Spec)
			case ActionResumeAll:
				err = h.ResumeAll(r.Context())
			default:
				writeErr(w, http.StatusBadRequest, fmt.Errorf("action %q: want %s, %s or %s",
					req.Action, ActionPause, ActionResume, ActionResumeAll))
				return
			}
			switch {
			case errors.Is(err, engine.ErrUnknownHook):
				writeErr(w, http.StatusNotFound, err)
			case err != nil:
				writeErr(w, http.StatusInternalServerError, err)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			writeErr(w, http.StatusMethodNotAllowed, fmt.Errorf("method %s", r.Method))
		}
	})
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeErr(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
}
