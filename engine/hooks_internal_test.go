package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/gate"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestGateCreditsHoldTimeAtResume(t *testing.T) {
	t.Parallel()
	var g gate.Gate
	g.Pause()
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	testkit.Eventually(t, 5*time.Second, func() error {
		if held, _ := g.Stats(); held != 1 {
			return errors.New("actor never reached the gate")
		}
		return nil
	})
	start := time.Now()
	for time.Since(start) < 20*time.Millisecond {
		time.Sleep(time.Millisecond)
	}
	g.Resume()
	_, heldFor := g.Stats() // read right after resume, before the actor wakes
	if heldFor < 20*time.Millisecond {
		t.Fatalf("hold time %v not credited at resume", heldFor)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, after := g.Stats(); after < heldFor || after > heldFor+time.Second {
		t.Fatalf("hold time changed from %v to %v after the actor woke (double count?)", heldFor, after)
	}
}
