package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// State returns the one-letter state of a process from /proc/<pid>/stat
// ('R' running, 'S' sleeping, 'T' stopped, 'Z' zombie, ...), or 0 when the
// process no longer exists.
func State(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		// Gone, or reaped between open and read.
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces or ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, fmt.Errorf("parse /proc/%d/stat: %q", pid, s)
	}
	return s[i+2], nil
}

// waitState polls the state of pid until ok accepts it or ctx ends; it
// returns the last state seen.
func waitState(ctx context.Context, pid int, ok func(byte) bool) (byte, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, err := State(pid)
		if err != nil {
			return st, err
		}
		if ok(st) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-tick.C:
		}
	}
}

func stopped(st byte) bool { return st == 'T' || st == 't' }

func gone(st byte) bool { return st == 0 || st == 'Z' || st == 'X' }
