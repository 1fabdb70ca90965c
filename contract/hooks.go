package contract

import (
	"context"
	"errors"
	"fmt"
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
	// HookBootstrapLoop holds prefill's bootstrap loop (registrations,
	// metadata, ABORTs wait in the socket).
	HookBootstrapLoop = "bootstrap-loop"
	// HookScheduler holds a role's scheduler loop.
	HookScheduler = "scheduler"
)

// HookNames lists every hook, for error messages and docs.
var HookNames = []string{HookTransferWorkers, HookTransferWrites, HookBootstrapLoop, HookScheduler}

// PerWorker reports whether a hook selects transfer workers one by one.
func PerWorker(hook string) bool { return hook == HookTransferWorkers || hook == HookTransferWrites }

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

// Selects reports whether the selector s picks the concrete gate g: same
// hook, any role or the same, any rank or the same, and for per-worker
// hooks any worker or the same. Every Hooks implementation matches with it,
// so a pause means the same on an in-process engine, over HTTP and in tests.
func (s HookSpec) Selects(g HookSpec) bool {
	return g.Hook == s.Hook && (s.Role == "" || g.Role == s.Role) &&
		(s.Rank < 0 || g.Rank == s.Rank) &&
		(!PerWorker(s.Hook) || s.Worker < 0 || g.Worker == s.Worker)
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
// it directly; a separate engine process serves it at HooksPath and
// faults/hooks.HooksClient speaks to that.
type Hooks interface {
	// Pause closes the selected gates. Actors stop at their next check.
	// Pauses are counted per gate.
	Pause(ctx context.Context, spec HookSpec) error
	// Resume undoes one Pause of each selected gate; a gate opens once
	// every Pause on it is undone, so overlapping faults heal separately.
	Resume(ctx context.Context, spec HookSpec) error
	// ResumeAll opens every gate whatever pauses are outstanding; used to
	// heal after a crashed run.
	ResumeAll(ctx context.Context) error
	// State reports every gate.
	State(ctx context.Context) ([]HookState, error)
}

// Actions a POST to HooksPath can ask for.
const (
	HookActionPause     = "pause"
	HookActionResume    = "resume"
	HookActionResumeAll = "resume-all"
)

// HooksRequest is the POST body of HooksPath.
type HooksRequest struct {
	Action string   `json:"action"` // HookActionPause, HookActionResume, HookActionResumeAll
	Spec   HookSpec `json:"spec"`
}
