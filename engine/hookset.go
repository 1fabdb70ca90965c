package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/gate"
)

// hookEntry is one concrete gate: its hook, role, rank and worker.
type hookEntry struct {
	spec contract.HookSpec
	gate *gate.Gate
}

// hookSet implements contract.Hooks over a fixed list of gates.
type hookSet []hookEntry

var _ contract.Hooks = hookSet(nil)

func (h hookSet) match(spec contract.HookSpec) ([]*gate.Gate, error) {
	var out []*gate.Gate
	for _, e := range h {
		if !spec.Selects(e.spec) {
			continue
		}
		out = append(out, e.gate)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s (hooks: %v)", contract.ErrUnknownHook, spec, contract.HookNames)
	}
	return out, nil
}

func (h hookSet) Pause(_ context.Context, spec contract.HookSpec) error {
	gates, err := h.match(spec)
	if err != nil {
		return err
	}
	for _, g := range gates {
		g.Pause()
	}
	return nil
}

func (h hookSet) Resume(_ context.Context, spec contract.HookSpec) error {
	gates, err := h.match(spec)
	if err != nil {
		return err
	}
	for _, g := range gates {
		g.Resume()
	}
	return nil
}

func (h hookSet) ResumeAll(context.Context) error {
	for _, e := range h {
		e.gate.Open()
	}
	return nil
}

func (h hookSet) State(context.Context) ([]contract.HookState, error) {
	out := make([]contract.HookState, 0, len(h))
	for _, e := range h {
		held, heldFor := e.gate.Stats()
		out = append(out, contract.HookState{HookSpec: e.spec, Paused: e.gate.Paused(), Held: held, HeldFor: heldFor})
	}
	return out, nil
}

// ServeHooks is the /debug/hooks handler, for loopback callers only: GET
// lists every gate, POST {action, spec} pauses or resumes and answers with
// the new states. faults/hooks.HooksClient speaks to it.
func ServeHooks(h contract.Hooks) http.Handler {
	return loopbackOnly(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			st, err := h.State(r.Context())
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			writeJSON(w, st)
		case http.MethodPost:
			var req contract.HooksRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				writeError(w, http.StatusBadRequest, "decode hooks request: "+err.Error())
				return
			}
			var err error
			switch req.Action {
			case contract.HookActionPause:
				err = h.Pause(r.Context(), req.Spec)
			case contract.HookActionResume:
				err = h.Resume(r.Context(), req.Spec)
			case contract.HookActionResumeAll:
				err = h.ResumeAll(r.Context())
			default:
				writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown hooks action %q (want pause, resume, resume-all)", req.Action))
				return
			}
			if errors.Is(err, contract.ErrUnknownHook) {
				writeError(w, http.StatusNotFound, err.Error())
				return
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			st, _ := h.State(r.Context())
			writeJSON(w, st)
		default:
			writeError(w, http.StatusMethodNotAllowed, "use GET or POST")
		}
	})
}
