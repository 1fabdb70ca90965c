package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Hook names: the engine actors a fault can pause. Each actor checks its gate
// once per loop step; a transfer worker checks it while holding a chunk it
// has started, which is the moment that matters for the abort races.
const (
	// HookTransferWorkers holds a worker with a chunk it has dequeued, before
	// it decides to write it (an ABORT arriving meanwhile is seen).
	HookTransferWorkers = "transfer-workers"
	// HookTransferWrites holds a worker with a write it has already posted,
	// like an RDMA write stalled on the wire: the write lands on resume
	// whatever happened to the room meanwhile.
	HookTransferWrites = "transfer-writes"
	HookBootstrapLoop  = "bootstrap-loop"
	HookScheduler      = "scheduler"
)

// HookNames lists every hook, for error messages and docs.
var HookNames = []string{HookTransferWorkers, HookTransferWrites, HookBootstrapLoop, HookScheduler}

// ErrUnknownHook is returned for a hook, role, rank or worker the engine
// does not have.
var ErrUnknownHook = errors.New("unknown engine hook")

// HookSpec selects gates: a hook on a role, one rank or all (-1), one
// transfer worker or all (-1).
type HookSpec struct {
	Hook   string `json:"hook"`
	Role   string `json:"role"`             // "prefill" or "decode"
	Rank   int    `json:"rank"`             // -1 = every rank
	Worker int    `json:"worker,omitempty"` // transfer workers only; -1 = every worker
}

func (s HookSpec) String() string {
	return fmt.Sprintf("%s/%s/rank=%d/worker=%d", s.Role, s.Hook, s.Rank, s.Worker)
}

// HookState reports one gate: whether it is closed and the evidence that a
// pause took effect (how many times the actor was held and for how long).
type HookState struct {
	HookSpec
	Paused  bool          `json:"paused"`
	Held    int64         `json:"held"`    // times the actor stopped at the closed gate
	HeldFor time.Duration `json:"held_ns"` // total time actors spent held
}

// Hooks pauses and resumes engine actors. The in-process cluster implements
// it directly; a separate engine process exposes it at /debug/hooks and
// HooksClient speaks to that.
type Hooks interface {
	// Pause closes the selected gates. Actors stop at their next check.
	Pause(ctx context.Context, spec HookSpec) error
	// Resume opens the selected gates.
	Resume(ctx context.Context, spec HookSpec) error
	// ResumeAll opens every gate; used to heal after a crashed run.
	ResumeAll(ctx context.Context) error
	// State reports every gate.
	State(ctx context.Context) ([]HookState, error)
}

// Gate is one pausable point in an actor's loop. The zero value is open.
type Gate struct {
	mu      sync.Mutex
	closed  chan struct{} // non-nil while paused; closed on resume
	held    int64
	heldFor time.Duration
	waiting map[*time.Time]struct{} // start of each actor held right now
}

// Pause closes the gate.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Resume opens the gate and releases every held actor, crediting their
// hold time now so evidence read right after a heal is complete.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for start := range g.waiting {
		g.heldFor += now.Sub(*start)
		delete(g.waiting, start)
	}
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// Paused reports whether the gate is closed.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed != nil
}

// Wait blocks while the gate is closed, or until ctx ends.
func (g *Gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.closed
	if ch == nil {
		g.mu.Unlock()
		return nil
	}
	g.held++
	start := time.Now()
	if g.waiting == nil {
		g.waiting = map[*time.Time]struct{}{}
	}
	g.waiting[&start] = struct{}{}
	g.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.mu.Lock()
	if _, ok := g.waiting[&start]; ok { // not credited by Resume
		g.heldFor += time.Since(start)
		delete(g.waiting, &start)
	}
	g.mu.Unlock()
	return err
}

// Stats returns how often and how long actors were held, including the
// time of actors held right now.
func (g *Gate) Stats() (held int64, heldFor time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	heldFor = g.heldFor
	for start := range g.waiting {
		heldFor += time.Since(*start)
	}
	return g.held, heldFor
}
