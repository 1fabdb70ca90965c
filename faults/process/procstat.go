package process

import (
	"context"
	"time"

	"github.com/pdchaos/pdchaos/faults/internal/proctree"
)

// State returns the one-letter state of a process from /proc/<pid>/stat
// ('R' running, 'S' sleeping, 'T' stopped, 'Z' zombie, ...), or 0 when the
// process no longer exists.
func State(pid int) (byte, error) {
	st, _, err := proctree.Stat(pid)
	return st, err
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
