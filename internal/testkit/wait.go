package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Tick is how often Poll, Eventually and Consistently evaluate their
// condition.
const Tick = 10 * time.Millisecond

// Waited is what a successful wait found.
type Waited struct {
	// Took is how long the condition took to hold.
	Took time.Duration
	// First is the condition's first error: what was still pending when the
	// wait began (nil when it held at once).
	First error
}

// Poll evaluates cond every Tick until it returns nil, timeout passes or ctx
// ends; the error then wraps cond's last error (or ctx's).
func Poll(ctx context.Context, timeout time.Duration, cond func() error) (Waited, error) {
	start := time.Now()
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	var w Waited
	for {
		err := cond()
		if err == nil {
			w.Took = time.Since(start)
			return w, nil
		}
		if w.First == nil {
			w.First = err
		}
		if time.Since(start) > timeout {
			return w, fmt.Errorf("condition not met within %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return w, fmt.Errorf("condition not met (%w): %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Eventually waits for cond to return nil, failing t with cond's last error
// after timeout or when the test's context ends.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) Waited {
	t.Helper()
	w, err := Poll(t.Context(), timeout, cond)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Consistently checks that cond returns nil on every Tick for the whole
// window (at its start and its end included), failing t the first time it
// does not: how a test shows a wedge stays a wedge.
func Consistently(t testing.TB, window time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(window)
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		if err := cond(); err != nil {
			t.Fatalf("condition stopped holding: %v", err)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while checking a condition: %v", t.Context().Err())
		case <-tick.C:
		}
	}
}

// TestTimeout bounds a whole test in Context.
const TestTimeout = time.Minute

// Context returns a context that ends after TestTimeout or when the test
// ends, whichever is first: it bounds a whole test so a bug hangs nothing.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), TestTimeout)
	t.Cleanup(cancel)
	return ctx
}
