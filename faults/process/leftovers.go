package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// RunLabel is the label a harness gives the role processes it starts:
// "pdchaos-<harness pid>-<n>". The harness pid lets a later reset tell a
// leftover (its harness is gone) from a process a live run still owns.
func RunLabel(harnessPID int, n int64) string { return fmt.Sprintf("pdchaos-%d-%d", harnessPID, n) }

// Leftover is a role process whose harness is gone.
type Leftover struct {
	PID        int
	Label      string
	HarnessPID int
	State      byte // as in /proc/<pid>/stat: 'T' is stopped
	Cmdline    string
}

// FindLeftovers lists the processes under procRoot (normally "/proc") that
// carry a run label (contract.RunLabelFlag) whose harness process no
// longer exists. A process whose harness is alive belongs to a run in
// progress and is never listed.
func FindLeftovers(procRoot string) ([]Leftover, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("find leftovers: read %s: %w", procRoot, err)
	}
	var out []Leftover
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		label, hpid, ok := runLabel(args)
		if !ok || alive(hpid) {
			continue
		}
		st, _ := State(pid)
		if st == 0 || st == 'Z' {
			continue
		}
		out = append(out, Leftover{PID: pid, Label: label, HarnessPID: hpid, State: st, Cmdline: strings.Join(args, " ")})
	}
	return out, nil
}

// runLabel finds --run-label=pdchaos-<pid>-<n> (or the flag and its value
// as two arguments) in a command line.
func runLabel(args []string) (label string, harnessPID int, ok bool) {
	flag := "--" + contract.RunLabelFlag
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, flag+"="):
			label = strings.TrimPrefix(a, flag+"=")
		case a == flag && i+1 < len(args):
			label = args[i+1]
		default:
			continue
		}
		parts := strings.Split(label, "-")
		if len(parts) != 3 || parts[0] != "pdchaos" {
			return "", 0, false
		}
		pid, err := strconv.Atoi(parts[1])
		return label, pid, err == nil && pid > 0
	}
	return "", 0, false
}

// alive reports whether a process exists (signal 0 succeeds or is refused).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// EndLeftovers ends each leftover's process group: SIGCONT first (a
// stopped process cannot act on SIGTERM), then SIGTERM, then SIGKILL for
// what is still there after grace. It returns once every one is gone or
// ctx ends, naming any that survived.
func EndLeftovers(ctx context.Context, ls []Leftover, grace time.Duration) error {
	for _, l := range ls {
		signalGroup(l.PID, syscall.SIGCONT)
		signalGroup(l.PID, syscall.SIGTERM)
	}
	var errs []error
	for _, l := range ls {
		wctx, cancel := context.WithTimeout(ctx, grace)
		st, _ := waitState(wctx, l.PID, func(s byte) bool { return s == 0 || s == 'Z' })
		cancel()
		if st == 0 || st == 'Z' {
			continue
		}
		signalGroup(l.PID, syscall.SIGKILL)
		kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := waitState(kctx, l.PID, func(s byte) bool { return s == 0 || s == 'Z' })
		cancel()
		if err != nil && st != 0 && st != 'Z' {
			errs = append(errs, fmt.Errorf("end leftover pid %d (%s): still state %c: %w", l.PID, l.Label, st, err))
		}
	}
	return errors.Join(errs...)
}

// signalGroup signals pid's process group when pid leads one (role
// processes do), else pid alone.
func signalGroup(pid int, sig syscall.Signal) {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pid, sig)
		return
	}
	_ = syscall.Kill(pid, sig)
}
