package testkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestPoll(t *testing.T) {
	t.Parallel()
	pending := errors.New("pending")
	t.Run("holds after a few ticks", func(t *testing.T) {
		t.Parallel()
		calls := 0
		w, err := testkit.Poll(t.Context(), time.Minute, func() error {
			if calls++; calls < 3 {
				return pending
			}
			return nil
		})
		if err != nil || calls != 3 || w.First != pending {
			t.Fatalf("err %v, calls %d, first %v", err, calls, w.First)
		}
	})
	t.Run("holds at once", func(t *testing.T) {
		t.Parallel()
		w, err := testkit.Poll(t.Context(), time.Minute, func() error { return nil })
		if err != nil || w.First != nil {
			t.Fatalf("err %v, first %v", err, w.First)
		}
	})
	t.Run("times out with the last error", func(t *testing.T) {
		t.Parallel()
		_, err := testkit.Poll(t.Context(), 0, func() error { return pending })
		if !errors.Is(err, pending) || !strings.Contains(err.Error(), "not met within") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("stops with its ctx", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := testkit.Poll(ctx, time.Minute, func() error { return pending })
		if !errors.Is(err, context.Canceled) || !errors.Is(err, pending) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestAsyncAndRecv(t *testing.T) {
	testkit.NoLeaks(t)
	ch, _ := testkit.Async(t, func(ctx context.Context) int { return 7 })
	if v := testkit.Recv(t, ch, time.Minute); v != 7 {
		t.Fatalf("got %d", v)
	}
	blocked, cancel := testkit.Async(t, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if err := testkit.NotDone(blocked); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := testkit.Recv(t, blocked, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
