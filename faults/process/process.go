package process

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// ObserveTimeout bounds how long an injection waits to see the process
// change state (stopped, gone) before it reports the fault as not applied.
const ObserveTimeout = 5 * time.Second

// Stop freezes a role's whole process tree with SIGSTOP (the role's
// process and every descendant, such as SGLang's scheduler and
// detokenizer subprocesses); heal sends SIGCONT to all of them. Sockets
// stay open, so peers see a silent peer rather than a closed one. Both
// directions are verified from /proc: every process of the tree in state
// T after Inject, none after heal. Use by pointer: it records evidence.
type Stop struct {
	// Role is the role process to freeze (router, prefill, decode).
	Role string
	rec  recorder
}

// Name says which role, e.g. "sigstop(prefill)".
func (f *Stop) Name() string { return faults.StopName(f.Role) }

// Layer is process.
func (f *Stop) Layer() faults.Layer { return faults.LayerProcess }

// Inject stops the role's process tree and waits until /proc shows every
// process of it stopped; on failure it continues what it stopped.
func (f *Stop) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	_, pid, err := lookup(t, f.Name(), f.Role)
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	pids, err := StopTree(octx, pid)
	if err != nil {
		return nil, fmt.Errorf("inject %s (pid %d): %w", f.Name(), pid, err)
	}
	f.rec.count("stopped_observed")
	f.rec.add("processes_stopped", int64(len(pids)))
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			cctx, cancel := context.WithTimeout(ctx, ObserveTimeout)
			defer cancel()
			if cerr := ContinueTree(cctx, pid, pids); cerr != nil {
				err = fmt.Errorf("heal %s (pid %d): %w", f.Name(), pid, cerr)
				return
			}
			f.rec.count("continued")
		})
		return err
	}, nil
}

// Preflight checks that the role's process can be found.
func (f *Stop) Preflight(t faults.Target) error {
	_, _, err := lookup(t, f.Name(), f.Role)
	return err
}

// Evidence reports whether the process was seen stopped.
func (f *Stop) Evidence() faults.Evidence {
	return f.rec.evidence(f.Name(), "stopped_observed", "state 'T' read from /proc/<pid>/stat for every process of the role's tree after SIGSTOP, and none stopped after SIGCONT")
}

// Kill crashes a role's process tree with SIGKILL. With Restart the role
// is restarted at once, inside Inject (a crash-restart blip); without it
// the role stays down for the window and heal restarts it. A target that
// cannot restart its roles (an external deployment: the harness did not
// start them) is refused before anything is killed.
type Kill struct {
	// Role is the role process to kill (router, prefill, decode).
	Role string
	// Restart restarts the role inside Inject rather than at heal.
	Restart bool
	rec     recorder
}

// Name says which role, e.g. "sigkill(decode,restart)".
func (f *Kill) Name() string { return faults.KillName(f.Role, f.Restart) }

// Layer is process.
func (f *Kill) Layer() faults.Layer { return faults.LayerProcess }

// RestartChecker is an optional capability of contract.Processes: whether
// Restart can work for a role at all. Kill asks it before killing, so a
// role that could never come back is not taken down.
type RestartChecker interface {
	// CanRestart is nil when Restart(role) can work, else an error (wrapping
	// contract.ErrUnsupported) saying why not.
	CanRestart(role string) error
}

// Inject kills the role's process tree, waits until /proc shows it gone
// and, with Restart, restarts it.
func (f *Kill) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	procs, pid, err := lookup(t, f.Name(), f.Role)
	if err != nil {
		return nil, err
	}
	if rc, ok := procs.(RestartChecker); ok {
		if err := rc.CanRestart(f.Role); err != nil {
			return nil, fmt.Errorf("inject %s: nothing killed: %w", f.Name(), err)
		}
	}
	octx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	if _, err := KillTree(octx, pid); err != nil {
		return nil, fmt.Errorf("inject %s (pid %d): %w", f.Name(), pid, err)
	}
	f.rec.count("killed_observed")
	var (
		mu        sync.Mutex
		restarted bool
	)
	restart := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if restarted {
			return nil
		}
		if err := procs.Restart(ctx, f.Role); err != nil {
			return fmt.Errorf("restart %s: %w", f.Role, err)
		}
		restarted = true
		f.rec.count("restarts")
		return nil
	}
	if f.Restart {
		if err := restart(ctx); err != nil {
			return nil, fmt.Errorf("inject %s: %w", f.Name(), err)
		}
	}
	return func(ctx context.Context) error {
		if err := restart(ctx); err != nil {
			return fmt.Errorf("heal %s: %w", f.Name(), err)
		}
		return nil
	}, nil
}

// Preflight checks that the role's process can be found and, where the
// target says whether it can, restarted.
func (f *Kill) Preflight(t faults.Target) error {
	procs, _, err := lookup(t, f.Name(), f.Role)
	if err != nil {
		return err
	}
	if rc, ok := procs.(RestartChecker); ok {
		if err := rc.CanRestart(f.Role); err != nil {
			return err
		}
	}
	return nil
}

// Evidence reports kills seen in /proc and restarts done.
func (f *Kill) Evidence() faults.Evidence {
	return f.rec.evidence(f.Name(), "killed_observed", "process gone from /proc after SIGKILL; restarts done")
}

// lookup finds the role's process, naming the valid roles when it is unknown.
func lookup(t faults.Target, name, role string) (contract.Processes, int, error) {
	procs, err := t.Processes()
	if err != nil {
		return nil, 0, fmt.Errorf("inject %s: %w", name, err)
	}
	if roles := procs.Roles(); !slices.Contains(roles, role) {
		return nil, 0, fmt.Errorf("inject %s: no role process %q (valid: %s): %w",
			name, role, strings.Join(roles, ", "), contract.ErrUnsupported)
	}
	pid, err := procs.PID(role)
	if err != nil {
		return nil, 0, fmt.Errorf("inject %s: %w", name, err)
	}
	if pid <= 0 {
		return nil, 0, fmt.Errorf("inject %s: role %s has no process (pid %d)", name, role, pid)
	}
	return procs, pid, nil
}

// recorder counts what a process fault observed over its injections.
type recorder struct {
	mu sync.Mutex
	c  map[string]int64
}

func (r *recorder) count(k string) { r.add(k, 1) }

func (r *recorder) add(k string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.c == nil {
		r.c = map[string]int64{}
	}
	r.c[k] += n
}

func (r *recorder) evidence(name, key, detail string) faults.Evidence {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := map[string]int64{}
	for k, v := range r.c {
		c[k] = v
	}
	return faults.Evidence{Fault: name, Effective: c[key] > 0, Counters: c, Detail: detail}
}

var (
	_ faults.Fault       = (*Stop)(nil)
	_ faults.Fault       = (*Kill)(nil)
	_ faults.Preflighter = (*Stop)(nil)
	_ faults.Preflighter = (*Kill)(nil)
)
