package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// ObserveTimeout bounds how long an injection waits to see the process
// change state (stopped, gone) before it reports the fault as not applied.
const ObserveTimeout = 5 * time.Second

// Stop freezes a role process with SIGSTOP; heal sends SIGCONT. Its sockets
// stay open, so peers see a silent peer rather than a closed one. Use by
// pointer: it records evidence.
type Stop struct {
	Role string
	rec  recorder
}

// Name says which role, e.g. "sigstop(prefill)".
func (f *Stop) Name() string { return fmt.Sprintf("sigstop(%s)", f.Role) }

// Layer is process.
func (f *Stop) Layer() faults.Layer { return faults.LayerProcess }

// Inject stops the role's process and waits until /proc shows it stopped.
func (f *Stop) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	_, pid, err := lookup(t, f.Name(), f.Role)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("inject %s (pid %d): %w", f.Name(), pid, err)
	}
	octx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	if st, err := waitState(octx, pid, stopped); err != nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		return nil, fmt.Errorf("inject %s (pid %d): state %q, not stopped: %w", f.Name(), pid, st, err)
	}
	f.rec.count("stopped_observed")
	var once sync.Once
	return func(context.Context) error {
		var err error
		once.Do(func() {
			if kerr := syscall.Kill(pid, syscall.SIGCONT); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
				err = fmt.Errorf("heal %s (pid %d): %w", f.Name(), pid, kerr)
				return
			}
			f.rec.count("continued")
		})
		return err
	}, nil
}

// Evidence reports whether the process was seen stopped.
func (f *Stop) Evidence() faults.Evidence {
	return f.rec.evidence(f.Name(), "stopped_observed", "process state 'T' read from /proc/<pid>/stat after SIGSTOP")
}

// Kill crashes a role process with SIGKILL. With Restart the role is
// restarted at once, inside Inject (a crash-restart blip); without it the
// role stays down for the window and heal restarts it.
type Kill struct {
	Role    string
	Restart bool
	rec     recorder
}

// Name says which role, e.g. "sigkill(decode,restart)".
func (f *Kill) Name() string {
	if f.Restart {
		return fmt.Sprintf("sigkill(%s,restart)", f.Role)
	}
	return fmt.Sprintf("sigkill(%s)", f.Role)
}

// Layer is process.
func (f *Kill) Layer() faults.Layer { return faults.LayerProcess }

// Inject kills the role's process, waits until it is gone and, with
// Restart, restarts it.
func (f *Kill) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	procs, pid, err := lookup(t, f.Name(), f.Role)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("inject %s (pid %d): %w", f.Name(), pid, err)
	}
	octx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	if st, err := waitState(octx, pid, gone); err != nil {
		return nil, fmt.Errorf("inject %s (pid %d): state %q, not gone: %w", f.Name(), pid, st, err)
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

func (r *recorder) count(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.c == nil {
		r.c = map[string]int64{}
	}
	r.c[k]++
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
	_ faults.Fault = (*Stop)(nil)
	_ faults.Fault = (*Kill)(nil)
)
