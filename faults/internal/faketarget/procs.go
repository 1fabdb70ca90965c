package faketarget

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

func yield() { runtime.Gosched() }

var _ contract.Processes = (*Processes)(nil)

// Processes runs each role as a real child process (sleep), reaped by a
// waiter goroutine so a killed process disappears from /proc.
type Processes struct {
	mu       sync.Mutex
	roles    []string
	cmds     map[string]*proc
	restarts int
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// NewProcesses starts one child per role; they are killed at test end.
func NewProcesses(tb testing.TB, roles ...string) *Processes {
	tb.Helper()
	p := &Processes{roles: roles, cmds: map[string]*proc{}}
	for _, r := range roles {
		if err := p.start(r); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(p.close)
	return p
}

func (p *Processes) start(role string) error {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", role, err)
	}
	pr := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(pr.done) }()
	p.cmds[role] = pr
	return nil
}

func (p *Processes) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.cmds {
		_ = pr.cmd.Process.Signal(syscall.SIGCONT)
		_ = pr.cmd.Process.Kill()
		<-pr.done
	}
}

// Roles lists the roles.
func (p *Processes) Roles() []string { return append([]string(nil), p.roles...) }

// PID returns the current pid of role.
func (p *Processes) PID(role string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.cmds[role]
	if !ok {
		return 0, fmt.Errorf("role %s: %w", role, contract.ErrUnsupported)
	}
	return pr.cmd.Process.Pid, nil
}

// Restart starts role again once its old process has exited.
func (p *Processes) Restart(ctx context.Context, role string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.cmds[role]
	if !ok {
		return fmt.Errorf("role %s: %w", role, contract.ErrUnsupported)
	}
	select {
	case <-pr.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.restarts++
	return p.start(role)
}

// Restarts counts restarts done.
func (p *Processes) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}
