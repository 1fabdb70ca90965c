package proctree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Root is where the proc filesystem is mounted.
const Root = "/proc"

// Stat returns a process's one-letter state ('R', 'S', 'T' stopped, 'Z'
// zombie, ...) and parent pid from /proc/<pid>/stat; state 0 means the
// process no longer exists.
func Stat(pid int) (state byte, ppid int, err error) {
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "stat"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, 0, nil // gone, or reaped between open and read
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces or ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, s)
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, fmt.Errorf("parse ppid in /proc/%d/stat: %w", pid, err)
	}
	return f[0][0], ppid, nil
}

// Children lists the direct children of pid: from
// /proc/<pid>/task/*/children where the kernel offers it, else by scanning
// every /proc/<n>/stat for parent pid.
func Children(pid int) []int {
	tasks, err := os.ReadDir(filepath.Join(Root, strconv.Itoa(pid), "task"))
	if err == nil {
		var out []int
		seen := map[int]bool{}
		ok := false
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "task", t.Name(), "children"))
			if err != nil {
				continue
			}
			ok = true
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
		if ok {
			return out
		}
	}
	return scanChildren(pid)
}

// scanChildren finds children by parent pid over all of /proc.
func scanChildren(pid int) []int {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ppid, err := Stat(n); err == nil && st != 0 && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// Tree returns pid and every living descendant, each parent before its
// children. It is empty when pid is gone.
func Tree(pid int) []int {
	if st, _, err := Stat(pid); err != nil || st == 0 {
		return nil
	}
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out); i++ {
		for _, c := range Children(out[i]) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Ancestors returns the parent chain of pid, nearest first, up to (not
// including) pid 0.
func Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{}
	for p := pid; p > 1 && !seen[p]; {
		seen[p] = true
		_, ppid, err := Stat(p)
		if err != nil || ppid <= 0 {
			break
		}
		out = append(out, ppid)
		p = ppid
	}
	return out
}

// Cmdline returns a process's command line with arguments joined by
// spaces, or "" when it is gone or unreadable.
func Cmdline(pid int) string {
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}

// Pids lists every process id under /proc.
func Pids() ([]int, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", Root, err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
