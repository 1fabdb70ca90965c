package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/process"
)

// multiHooks fans hook calls out to several engines.
type multiHooks []contract.Hooks

// Pause pauses the hook on every engine that has it; it fails only when
// none does or one fails for another reason.
func (m multiHooks) Pause(ctx context.Context, spec contract.HookSpec) error {
	matched := 0
	var unknown error
	for _, h := range m {
		err := h.Pause(ctx, spec)
		switch {
		case err == nil:
			matched++
		case errors.Is(err, contract.ErrUnknownHook):
			unknown = err
		default:
			return err
		}
	}
	if matched == 0 && unknown != nil {
		return unknown
	}
	return nil
}

// Resume resumes the hook on every engine, ignoring engines without it.
func (m multiHooks) Resume(ctx context.Context, spec contract.HookSpec) error {
	var errs []error
	for _, h := range m {
		if err := h.Resume(ctx, spec); err != nil && !errors.Is(err, contract.ErrUnknownHook) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ResumeAll resumes every hook on every engine.
func (m multiHooks) ResumeAll(ctx context.Context) error {
	var errs []error
	for _, h := range m {
		errs = append(errs, h.ResumeAll(ctx))
	}
	return errors.Join(errs...)
}

// State lists the hooks of every engine.
func (m multiHooks) State(ctx context.Context) ([]contract.HookState, error) {
	var out []contract.HookState
	for _, h := range m {
		s, err := h.State(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

// externalProcs is contract.Processes over roles the harness did not
// start: each given as a pid or as a pattern matched against command lines
// (process.FindProcess), resolved again at every PID call so a role its
// supervisor restarted is found anew. Restart is unsupported.
type externalProcs struct {
	pids     map[string]int
	patterns map[string]string
}

// Roles lists the roles given, in router, prefill, decode order.
func (p externalProcs) Roles() []string {
	var out []string
	for _, r := range []string{"router", "prefill", "decode"} {
		_, ok1 := p.pids[r]
		_, ok2 := p.patterns[r]
		if ok1 || ok2 {
			out = append(out, r)
		}
	}
	return out
}

// PID returns the role's pid, finding it by pattern when one was given.
func (p externalProcs) PID(role string) (int, error) {
	if pat, ok := p.patterns[role]; ok {
		pid, err := process.FindProcess(pat)
		if err != nil {
			return 0, fmt.Errorf("process %s (--proc %s=%s): %w", role, role, pat, err)
		}
		return pid, nil
	}
	pid, ok := p.pids[role]
	if !ok {
		return 0, fmt.Errorf("process %s: %w: no pid or --proc pattern given", role, contract.ErrUnsupported)
	}
	return pid, nil
}

// Restart is unsupported: the harness did not start the process.
func (p externalProcs) Restart(_ context.Context, role string) error {
	return p.CanRestart(role)
}

// CanRestart is always an error: faults that need a restart (sigkill) are
// refused before they kill anything.
func (p externalProcs) CanRestart(role string) error {
	return fmt.Errorf("restart %s: %w: the harness did not start this process (external target); only stop/continue faults apply", role, contract.ErrUnsupported)
}
