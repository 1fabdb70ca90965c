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
// Pauses are counted: two faults that pause the same gate each resume it
// once, and the gate opens when the last one has, so the first heal does
// not end the other fault's window early.
type Gate struct {
	mu      sync.Mutex
	pauses  int           // Pause calls not yet matched by Resume
	closed  chan struct{} // non-nil while paused; closed on resume
	held    int64
	heldFor time.Duration
	waiting map[*time.Time]struct{} // start of each actor held right now
}

// Pause closes the gate (once more, if it is already closed).
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pauses++
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Resume undoes one Pause; the gate opens when no Pause is left. A Resume
// with no Pause outstanding does nothing.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pauses > 0 {
		g.pauses--
	}
	if g.pauses == 0 {
		g.open()
	}
}

// Open opens the gate whatever pauses are outstanding: for shutting down
// and for healing after a crashed run (ResumeAll).
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pauses = 0
	g.open()
}

// open releases every held actor, crediting their hold time now so
// evidence read right after a heal is complete. Caller holds g.mu.
func (g *Gate) open() {
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
