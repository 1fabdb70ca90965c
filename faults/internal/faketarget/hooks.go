package faketarget

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/gate"
)

var _ contract.Hooks = (*Hooks)(nil)

// Hooks implements contract.Hooks over a fixed set of gates, one per concrete
// spec (no -1 in it), as the engine would.
type Hooks struct {
	mu    sync.Mutex
	specs []contract.HookSpec
	gates []*gate.Gate
}

// NewHooks returns hooks with one gate per spec.
func NewHooks(specs ...contract.HookSpec) *Hooks {
	h := &Hooks{specs: specs}
	for range specs {
		h.gates = append(h.gates, new(gate.Gate))
	}
	return h
}

// Gate returns the gate of a concrete spec, for an actor to wait on.
func (h *Hooks) Gate(spec contract.HookSpec) *gate.Gate {
	for i, s := range h.specs {
		if s == spec {
			return h.gates[i]
		}
	}
	return nil
}

func (h *Hooks) each(spec contract.HookSpec, f func(*gate.Gate)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for i, s := range h.specs {
		if spec.Selects(s) {
			f(h.gates[i])
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", spec, contract.ErrUnknownHook)
	}
	return nil
}

// Pause closes the selected gates.
func (h *Hooks) Pause(_ context.Context, spec contract.HookSpec) error {
	return h.each(spec, (*gate.Gate).Pause)
}

// Resume opens the selected gates.
func (h *Hooks) Resume(_ context.Context, spec contract.HookSpec) error {
	return h.each(spec, (*gate.Gate).Resume)
}

// ResumeAll opens every gate.
func (h *Hooks) ResumeAll(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range h.gates {
		g.Open()
	}
	return nil
}

// State reports every gate.
func (h *Hooks) State(context.Context) ([]contract.HookState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]contract.HookState, len(h.specs))
	for i, s := range h.specs {
		held, heldFor := h.gates[i].Stats()
		out[i] = contract.HookState{HookSpec: s, Paused: h.gates[i].Paused(), Held: held, HeldFor: heldFor}
	}
	return out, nil
}

// RunActor waits on gate in a loop until ctx ends, as an engine actor
// checks its gate once per step; step is called after each pass, if not nil.
// It returns when the goroutine has stopped.
func RunActor(ctx context.Context, gate *gate.Gate, step func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := gate.Wait(ctx); err != nil {
				return
			}
			if step != nil {
				step()
			}
			select {
			case <-ctx.Done():
				return
			default:
			}
			yield()
		}
	}()
	return func() { <-done }
}

// Eventually polls cond every millisecond until it holds, failing the test
// with msg after timeout; tests wait on conditions this way, never by
// sleeping a guessed time.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, msg string) {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			tb.Fatalf("timed out after %v: %s", timeout, msg)
		case <-tick.C:
		}
	}
}
