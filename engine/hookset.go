package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// hookEntry is one concrete gate: its hook, role, rank and worker.
type hookEntry struct {
	spec HookSpec
	gate *Gate
}

// hookSet implements Hooks over a fixed list of gates.
type hookSet []hookEntry

var _ Hooks = hookSet(nil)

func (h hookSet) match(spec HookSpec) ([]*Gate, error) {
	var out []*Gate
	for _, e := range h {
		if e.spec.Hook != spec.Hook || (spec.Role != "" && e.spec.Role != spec.Role) {
			continue
		}
		if spec.Rank >= 0 && e.spec.Rank != spec.Rank {
			continue
		}
		if (spec.Hook == HookTransferWorkers || spec.Hook == HookTransferWrites) && spec.Worker >= 0 && e.spec.Worker != spec.Worker {
			continue
		}
		out = append(out, e.gate)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s (hooks: %v)", ErrUnknownHook, spec, HookNames)
	}
	return out, nil
}

func (h hookSet) Pause(_ context.Context, spec HookSpec) error {
	gates, err := h.match(spec)
	if err != nil {
		return err
	}
	for _, g := range gates {
		g.Pause()
	}
	return nil
}

func (h hookSet) Resume(_ context.Context, spec HookSpec) error {
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
		e.gate.Resume()
	}
	return nil
}

func (h hookSet) State(context.Context) ([]HookState, error) {
	out := make([]HookState, 0, len(h))
	for _, e := range h {
		held, heldFor := e.gate.Stats()
		out = append(out, HookState{HookSpec: e.spec, Paused: e.gate.Paused(), Held: held, HeldFor: heldFor})
	}
	return out, nil
}

// HooksPath is where every engine role serves its hooks.
const HooksPath = "/debug/hooks"

// Actions a POST to HooksPath can ask for.
const (
	HookActionPause     = "pause"
	HookActionResume    = "resume"
	HookActionResumeAll = "resume-all"
)

// ServeHooks is the /debug/hooks handler, for loopback callers only: GET
// lists every gate, POST {action, spec} pauses or resumes and answers with
// the new states. faults/hooks.HooksClient speaks to it.
func ServeHooks(h Hooks) http.Handler {
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
			var req HooksRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				writeError(w, http.StatusBadRequest, "decode hooks request: "+err.Error())
				return
			}
			var err error
			switch req.Action {
			case HookActionPause:
				err = h.Pause(r.Context(), req.Spec)
			case HookActionResume:
				err = h.Resume(r.Context(), req.Spec)
			case HookActionResumeAll:
				err = h.ResumeAll(r.Context())
			default:
				writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown hooks action %q (want pause, resume, resume-all)", req.Action))
				return
			}
			if errors.Is(err, ErrUnknownHook) {
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
