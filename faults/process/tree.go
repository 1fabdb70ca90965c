package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/pdchaos/pdchaos/faults/internal/proctree"
)

// Tree returns pid and every living descendant, parents first, read from
// /proc (/proc/<pid>/task/*/children, else parent pids in /proc/*/stat).
// A SIGSTOP to one PID does not freeze SGLang's scheduler subprocesses;
// the process faults act on this whole tree.
func Tree(pid int) []int { return proctree.Tree(pid) }

// StopTree freezes pid and all its descendants with SIGSTOP and returns
// once /proc shows every one of them stopped ('T'; a parent blocked in
// vfork on a stopped child shows 'D' and counts as frozen), or ctx ends. It stops the
// root first (so it forks no more) and walks the tree again until a walk
// finds no process it has not stopped. It returns the pids it stopped; on
// error it has already continued them, leaving nothing half-applied.
func StopTree(ctx context.Context, pid int) ([]int, error) {
	var stoppedPids []int
	seen := map[int]bool{}
	for round := 0; ; round++ {
		fresh := 0
		for _, p := range proctree.Tree(pid) {
			if seen[p] {
				continue
			}
			if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue // exited meanwhile
				}
				_ = ContinueTree(context.WithoutCancel(ctx), pid, stoppedPids)
				return nil, fmt.Errorf("stop pid %d of the tree of %d: %w", p, pid, err)
			}
			seen[p] = true
			stoppedPids = append(stoppedPids, p)
			fresh++
		}
		if fresh == 0 {
			break
		}
		if round > 100 {
			_ = ContinueTree(context.WithoutCancel(ctx), pid, stoppedPids)
			return nil, fmt.Errorf("stop the tree of %d: still forking after %d rounds", pid, round)
		}
	}
	if len(stoppedPids) == 0 {
		return nil, fmt.Errorf("stop the tree of %d: no such process", pid)
	}
	for _, p := range stoppedPids {
		// A parent blocked in vfork ('D' until its child execs) whose child
		// is stopped cannot run either: it is frozen, and takes its stop
		// once continued.
		frozen := func(s byte) bool { return stopped(s) || gone(s) || s == 'D' && vforkFrozen(p) }
		if st, err := waitState(ctx, p, frozen); err != nil {
			_ = ContinueTree(context.WithoutCancel(ctx), pid, stoppedPids)
			return nil, fmt.Errorf("stop the tree of %d: pid %d state %q, not stopped: %w", pid, p, st, err)
		}
	}
	return stoppedPids, nil
}

// vforkFrozen says whether pid has a stopped child (the vfork case of
// StopTree).
func vforkFrozen(pid int) bool {
	for _, c := range proctree.Children(pid) {
		if st, _, err := proctree.Stat(c); err == nil && stopped(st) {
			return true
		}
	}
	return false
}

// ContinueTree sends SIGCONT to every pid in pids and to every process now
// in the tree of root, then returns once /proc shows none of them stopped,
// or ctx ends (naming those still stopped).
func ContinueTree(ctx context.Context, root int, pids []int) error {
	all := slices.Clone(pids)
	for _, p := range proctree.Tree(root) {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	var errs []error
	for _, p := range all {
		if err := syscall.Kill(p, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("continue pid %d: %w", p, err))
		}
	}
	for _, p := range all {
		if st, err := waitState(ctx, p, func(s byte) bool { return !stopped(s) }); err != nil {
			errs = append(errs, fmt.Errorf("continue pid %d: still state %q: %w", p, st, err))
		}
	}
	return errors.Join(errs...)
}

// KillTree freezes the tree of pid (so nothing in it forks or restarts a
// child), sends SIGKILL to each process and returns once every one is gone
// from /proc (or a zombie), or ctx ends.
func KillTree(ctx context.Context, pid int) ([]int, error) {
	pids, err := StopTree(ctx, pid)
	if err != nil {
		return nil, fmt.Errorf("kill the tree of %d: %w", pid, err)
	}
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("kill pid %d of the tree of %d: %w", p, pid, err)
		}
	}
	for _, p := range pids {
		if st, err := waitState(ctx, p, gone); err != nil {
			return nil, fmt.Errorf("kill the tree of %d: pid %d state %q, not gone: %w", pid, p, st, err)
		}
	}
	return pids, nil
}

// StoppedIn lists the pids of the tree of pid that /proc shows stopped.
func StoppedIn(pid int) []int {
	var out []int
	for _, p := range proctree.Tree(pid) {
		if st, _, err := proctree.Stat(p); err == nil && stopped(st) {
			out = append(out, p)
		}
	}
	return out
}

// FindProcess returns the one process whose command line (arguments joined
// by spaces) matches the regular expression pattern, for `--proc
// ROLE=PATTERN`; an all-digit pattern is taken as a pid. This process and
// its ancestors are never matched (their command lines carry the pattern
// itself), and a match whose ancestor also matches is part of that
// ancestor's tree, not a second candidate. Zero or several candidates are
// an error naming them.
func FindProcess(pattern string) (int, error) {
	if pid, err := strconv.Atoi(pattern); err == nil {
		if st, _, err := proctree.Stat(pid); err != nil || st == 0 || st == 'Z' {
			return 0, fmt.Errorf("find process %d: no such process", pid)
		}
		return pid, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return 0, fmt.Errorf("find process by %q: %w", pattern, err)
	}
	skip := map[int]bool{os.Getpid(): true}
	for _, a := range proctree.Ancestors(os.Getpid()) {
		skip[a] = true
	}
	pids, err := proctree.Pids()
	if err != nil {
		return 0, fmt.Errorf("find process by %q: %w", pattern, err)
	}
	matched := map[int]bool{}
	for _, p := range pids {
		if skip[p] {
			continue
		}
		if cl := proctree.Cmdline(p); cl != "" && re.MatchString(cl) {
			if st, _, _ := proctree.Stat(p); st != 0 && st != 'Z' {
				matched[p] = true
			}
		}
	}
	var roots []int
	for p := range matched {
		root := true
		for _, a := range proctree.Ancestors(p) {
			root = root && !matched[a]
		}
		if root {
			roots = append(roots, p)
		}
	}
	slices.Sort(roots)
	switch len(roots) {
	case 0:
		return 0, fmt.Errorf("find process by %q: no process's command line matches", pattern)
	case 1:
		return roots[0], nil
	}
	var desc []string
	for _, p := range roots[:min(len(roots), 4)] {
		cl := proctree.Cmdline(p)
		if len(cl) > 80 {
			cl = cl[:80] + "…"
		}
		desc = append(desc, fmt.Sprintf("%d (%s)", p, cl))
	}
	return 0, fmt.Errorf("find process by %q: %d processes match, want one: %s", pattern, len(roots), strings.Join(desc, "; "))
}
