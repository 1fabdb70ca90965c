package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/gate"
)

func TestGateCreditsHoldTimeAtResume(t *testing.T) {
	t.Parallel()
	var g gate.Gate
	g.Pause()
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if held, _ := g.Stats(); held == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("actor never reached the gate")
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising
	}
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
