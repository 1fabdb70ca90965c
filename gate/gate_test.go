package gate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

// waitHeld waits until n actors were held at g.
func waitHeld(t *testing.T, g *Gate, n int64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		if held, _ := g.Stats(); held < n {
			return fmt.Errorf("%d actors held, want %d", held, n)
		}
		return nil
	})
}

// Two pauses need two resumes: the first fault's heal must not end the
// second fault's window.
func TestPausesAreCounted(t *testing.T) {
	var g Gate
	g.Pause()
	g.Pause()
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	waitHeld(t, &g, 1)
	g.Resume()
	if !g.Paused() {
		t.Fatal("gate open after one of two resumes")
	}
	select {
	case <-done:
		t.Fatal("actor released after one of two resumes")
	default:
	}
	g.Resume()
	if g.Paused() {
		t.Fatal("gate closed after both resumes")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g.Resume() // no pause outstanding: nothing happens, and no debt
	g.Pause()
	if !g.Paused() {
		t.Fatal("a stray Resume must not pre-pay the next Pause")
	}
	g.Open()
}

// Open opens whatever is outstanding.
func TestOpenForcesOpen(t *testing.T) {
	var g Gate
	g.Pause()
	g.Pause()
	g.Open()
	if g.Paused() {
		t.Fatal("Open left the gate closed")
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
