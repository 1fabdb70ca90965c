package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// getOK GETs url and wants 200.
func getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health %s: %w", url, err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health %s: status %d", url, resp.StatusCode)
	}
	return nil
}

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

// pidProcesses is contract.Processes over fixed pids, without restart.
type pidProcesses map[string]int

// Roles lists the roles with a pid, in router, prefill, decode order.
func (p pidProcesses) Roles() []string {
	var out []string
	for _, r := range []string{"router", "prefill", "decode"} {
		if _, ok := p[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

// PID returns the role's given pid.
func (p pidProcesses) PID(role string) (int, error) {
	pid, ok := p[role]
	if !ok {
		return 0, fmt.Errorf("process %s: %w: no pid given", role, contract.ErrUnsupported)
	}
	return pid, nil
}

// Restart is unsupported: the harness did not start the process.
func (p pidProcesses) Restart(_ context.Context, role string) error {
	return fmt.Errorf("restart %s: %w: the harness did not start this process", role, contract.ErrUnsupported)
}
