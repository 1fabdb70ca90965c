package faults

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/internal/proctree"
)

// Reset clears what a crashed or killed run may have left on a target
// before the next run starts: it opens every engine hook gate (ResumeAll)
// and sends SIGCONT to every role's process tree, so a stopped process runs
// again.
// Capabilities the target lacks are skipped.
//
// Network faults need no reset: the embedded Toxiproxy lives in the
// harness process and dies with it, taking every proxy and toxic along. An
// in-process engine's Interpose dies with it too; an external target whose
// links still point at a dead proxy must be restarted by its owner. A role
// killed and not restarted is not restarted here; Target.Processes().Restart
// does that.
func Reset(ctx context.Context, t Target) error {
	var errs []error
	if h, err := t.Hooks(); err == nil {
		if err := h.ResumeAll(ctx); err != nil {
			errs = append(errs, fmt.Errorf("reset hooks: %w", err))
		}
	} else if !errors.Is(err, contract.ErrUnsupported) {
		errs = append(errs, fmt.Errorf("reset hooks: %w", err))
	}
	if p, err := t.Processes(); err == nil {
		for _, role := range p.Roles() {
			pid, err := p.PID(role)
			if err != nil {
				errs = append(errs, fmt.Errorf("reset process %s: %w", role, err))
				continue
			}
			// The whole tree: a stop fault freezes the role's subprocesses too.
			for _, p := range append(proctree.Tree(pid), pid) {
				if err := syscall.Kill(p, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("reset process %s (pid %d): %w", role, p, err))
				}
			}
		}
	} else if !errors.Is(err, contract.ErrUnsupported) {
		errs = append(errs, fmt.Errorf("reset processes: %w", err))
	}
	return errors.Join(errs...)
}
