package engine

import (
	"context"
	"encoding/json"
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
		if spec.Hook == HookTransferWorkers && spec.Worker >= 0 && e.spec.Worker != spec.Worker {
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

// serveHooks is /debug/hooks: GET lists gates, POST {action, spec} acts.
func serveHooks(h Hooks) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
			case "pause":
				err = h.Pause(r.Context(), req.Spec)
			case "resume":
				err = h.Resume(r.Context(), req.Spec)
			case "resume-all":
				err = h.ResumeAll(r.Context())
			default:
				writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown hooks action %q (want pause, resume, resume-all)", req.Action))
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
	}
}
