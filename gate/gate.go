// Package gate is a pausable point in an actor's loop. The engine's hooks
// are built from gates (one per actor and rank), and so are the fake targets
// the fault injectors are tested against, so a pause behaves the same in
// both.
//
// gate imports only the standard library.
package gate

import (
	"context"
	"sync"
	"time"
)

// Gate is one pausable point in an actor's loop. The zero value is open.
type Gate struct {
	mu      sync.Mutex
	closed  chan struct{} // non-nil while paused; closed on resume
	held    int64
	heldFor time.Duration
	waiting map[*time.Time]struct{} // start of each actor held right now
}

// Pause closes the gate.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Resume opens the gate and releases every held actor, crediting their
// hold time now so evidence read right after a heal is complete.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for start := range g.waiting {
		g.heldFor += now.Sub(*start)
		delete(g.waiting, start)
	}
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// Paused reports whether the gate is closed.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed != nil
}

// Wait blocks while the gate is closed, or until ctx ends.
func (g *Gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.closed
	if ch == nil {
		g.mu.Unlock()
		return nil
	}
	g.held++
	start := time.Now()
	if g.waiting == nil {
		g.waiting = map[*time.Time]struct{}{}
	}
	g.waiting[&start] = struct{}{}
	g.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.mu.Lock()
	if _, ok := g.waiting[&start]; ok { // not credited by Resume
		g.heldFor += time.Since(start)
		delete(g.waiting, &start)
	}
	g.mu.Unlock()
	return err
}

// Stats returns how often and how long actors were held, including the
// time of actors held right now.
func (g *Gate) Stats() (held int64, heldFor time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	heldFor = g.heldFor
	for start := range g.waiting {
		heldFor += time.Since(*start)
	}
	return g.held, heldFor
}
