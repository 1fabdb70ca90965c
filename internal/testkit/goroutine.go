package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Async runs f in a goroutine owned by the test and returns a channel that
// receives its one result, and the cancel of f's ctx. When the test ends,
// its cleanup cancels ctx and waits for f to return, so nothing outlives it.
func Async[T any](t testing.TB, f func(ctx context.Context) T) (<-chan T, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan T, 1)
	done := make(chan struct{})
	go func() { defer close(done); ch <- f(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ch, cancel
}

// Background is Async for a goroutine without a result: it runs f until
// the test ends (cancelling its ctx first) or the returned cancel is called.
func Background(t testing.TB, f func(ctx context.Context)) context.CancelFunc {
	t.Helper()
	_, cancel := Async(t, func(ctx context.Context) struct{} { f(ctx); return struct{}{} })
	return cancel
}

// Recv waits for a result on ch, failing t after timeout.
func Recv[T any](t testing.TB, ch <-chan T, timeout time.Duration) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("no result within %v", timeout)
		panic("unreachable") // t.Fatalf does not return
	}
}

// NotDone returns an error if ch already has a result: a condition for
// Consistently while a fault should hold a request.
func NotDone[T any](ch <-chan T) error {
	select {
	case v := <-ch:
		return fmt.Errorf("finished while the fault was active: %+v", v)
	default:
		return nil
	}
}
