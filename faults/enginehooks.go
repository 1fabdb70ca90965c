package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// PauseTransferWorkers closes the gate of one prefill transfer worker (or
// all, Worker -1) on one rank (or all, Rank -1), so chunks a worker has
// started wait while aborts race them. Use by pointer: it records evidence.
type PauseTransferWorkers struct {
	Role   string // "" means "prefill", the role that owns transfer workers
	Rank   int    // -1 = every rank
	Worker int    // -1 = every worker
	// InFlight holds workers with a write already posted (the KV lands on
	// resume even if the room was aborted meanwhile) instead of with a
	// chunk they have only dequeued.
	InFlight bool
	rec      hookRecorder
}

// Name says what and where, e.g. "pause-transfer-workers(prefill/0/worker=-1)".
func (f *PauseTransferWorkers) Name() string {
	kind := "pause-transfer-workers"
	if f.InFlight {
		kind = "pause-transfer-writes"
	}
	return fmt.Sprintf("%s(%s/%d/worker=%d)", kind, f.role(), f.Rank, f.Worker)
}

func (f *PauseTransferWorkers) role() string {
	if f.Role == "" {
		return "prefill"
	}
	return f.Role
}

// Layer is engine.
func (f *PauseTransferWorkers) Layer() Layer { return LayerEngine }

// Validate checks the fields without applying anything.
func (f *PauseTransferWorkers) Validate() error {
	if err := checkRoleRank(f.Name(), f.role(), f.Rank); err != nil {
		return err
	}
	if f.Worker < -1 {
		return fmt.Errorf("inject %s: field Worker: %d must be >= -1", f.Name(), f.Worker)
	}
	return nil
}

// Inject closes the selected transfer-worker gates.
func (f *PauseTransferWorkers) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	hook := contract.HookTransferWorkers
	if f.InFlight {
		hook = contract.HookTransferWrites
	}
	spec := contract.HookSpec{Hook: hook, Role: f.role(), Rank: f.Rank, Worker: f.Worker}
	return pauseHook(ctx, t, f.Name(), spec, &f.rec)
}

// Evidence reports how often and how long workers were held.
func (f *PauseTransferWorkers) Evidence() Evidence { return f.rec.evidence(f.Name()) }

// StallBootstrapLoop stops a prefill rank's bootstrap loop (or every rank's,
// Rank -1): decode registrations, metadata and ABORTs wait unread.
type StallBootstrapLoop struct {
	Rank int // -1 = every rank
	rec  hookRecorder
}

// Name says where, e.g. "stall-bootstrap-loop(prefill/0)".
func (f *StallBootstrapLoop) Name() string {
	return fmt.Sprintf("stall-bootstrap-loop(prefill/%d)", f.Rank)
}

// Layer is engine.
func (f *StallBootstrapLoop) Layer() Layer { return LayerEngine }

// Validate checks the fields without applying anything.
func (f *StallBootstrapLoop) Validate() error { return checkRoleRank(f.Name(), "prefill", f.Rank) }

// Inject closes the bootstrap-loop gates.
func (f *StallBootstrapLoop) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	spec := contract.HookSpec{Hook: contract.HookBootstrapLoop, Role: "prefill", Rank: f.Rank}
	return pauseHook(ctx, t, f.Name(), spec, &f.rec)
}

// Evidence reports how often and how long the loop was held.
func (f *StallBootstrapLoop) Evidence() Evidence { return f.rec.evidence(f.Name()) }

// StallScheduler stops the scheduler loop of a role's rank (or every rank,
// Rank -1), so queues stop moving while requests and aborts arrive.
type StallScheduler struct {
	Role string // "prefill" or "decode"
	Rank int    // -1 = every rank
	rec  hookRecorder
}

// Name says where, e.g. "stall-scheduler(decode/0)".
func (f *StallScheduler) Name() string { return fmt.Sprintf("stall-scheduler(%s/%d)", f.Role, f.Rank) }

// Layer is engine.
func (f *StallScheduler) Layer() Layer { return LayerEngine }

// Validate checks the fields without applying anything.
func (f *StallScheduler) Validate() error { return checkRoleRank(f.Name(), f.Role, f.Rank) }

// Inject closes the scheduler gates.
func (f *StallScheduler) Inject(ctx context.Context, t Target) (Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	spec := contract.HookSpec{Hook: contract.HookScheduler, Role: f.Role, Rank: f.Rank}
	return pauseHook(ctx, t, f.Name(), spec, &f.rec)
}

// Evidence reports how often and how long the scheduler was held.
func (f *StallScheduler) Evidence() Evidence { return f.rec.evidence(f.Name()) }

func checkRoleRank(name, role string, rank int) error {
	if role != "prefill" && role != "decode" {
		return fmt.Errorf("inject %s: field Role: %q must be prefill or decode", name, role)
	}
	if rank < -1 {
		return fmt.Errorf("inject %s: field Rank: %d must be >= -1", name, rank)
	}
	return nil
}

// heldBy sums the hold counters of the gates spec selects.
func heldBy(ctx context.Context, h contract.Hooks, spec contract.HookSpec) (held int64, heldFor time.Duration, err error) {
	states, err := h.State(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range states {
		if spec.Selects(s.HookSpec) {
			held += s.Held
			heldFor += s.HeldFor
		}
	}
	return held, heldFor, nil
}

// pauseHook pauses spec and returns a heal that resumes it and records how
// often actors were held in between.
func pauseHook(ctx context.Context, t Target, name string, spec contract.HookSpec, rec *hookRecorder) (Heal, error) {
	h, err := t.Hooks()
	if err != nil {
		return nil, fmt.Errorf("inject %s: %w", name, err)
	}
	held0, for0, err := heldBy(ctx, h, spec)
	if err != nil {
		return nil, fmt.Errorf("inject %s: read hook state: %w", name, err)
	}
	if err := h.Pause(ctx, spec); err != nil {
		// Pause may have closed some gates before failing.
		_ = h.Resume(context.WithoutCancel(ctx), spec)
		return nil, fmt.Errorf("inject %s: %w", name, err)
	}
	var (
		mu   sync.Mutex
		done bool
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return nil
		}
		if err := h.Resume(ctx, spec); err != nil {
			return fmt.Errorf("heal %s: %w", name, err)
		}
		done = true
		held, heldFor, err := heldBy(ctx, h, spec)
		if err != nil {
			rec.add(0, 0)
			return fmt.Errorf("heal %s: read hook state: %w", name, err)
		}
		rec.add(held-held0, heldFor-for0)
		return nil
	}, nil
}

// hookRecorder sums the holds over a fault's windows.
type hookRecorder struct {
	mu      sync.Mutex
	windows int64
	held    int64
	heldFor time.Duration
}

func (r *hookRecorder) add(held int64, heldFor time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows++
	r.held += held
	r.heldFor += heldFor
}

func (r *hookRecorder) evidence(name string) Evidence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Evidence{
		Fault:     name,
		Effective: r.held > 0,
		Counters:  map[string]int64{"windows": r.windows, "held": r.held, "held_ns": int64(r.heldFor)},
		Detail:    "times engine actors stopped at the closed gate, and for how long",
	}
}

var (
	_ Fault = (*PauseTransferWorkers)(nil)
	_ Fault = (*StallBootstrapLoop)(nil)
	_ Fault = (*StallScheduler)(nil)
)
