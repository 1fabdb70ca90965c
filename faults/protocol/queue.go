package protocol

import (
	"container/heap"
	"time"
)

// farFuture stands for "no deadline" for a held message.
var farFuture = time.Unix(1<<62, 0)

// entry is one unit of output on a connection: a message (or a command)
// with the time it may be written. Entries are written in (at, seq) order,
// so plain traffic keeps its order and a delayed or held entry is
// overtaken.
type entry struct {
	c     *pconn
	seq   uint64
	raw   []byte
	msg   *Message // nil for a command
	at    time.Time
	held  bool
	index int

	releaseOnAbort bool
	releaseAfter   uint64 // forwarded count at which to release; 0 = never
	// byAbort is set when its room's ABORT released it: the message then
	// goes out right behind that ABORT, which overtook it.
	byAbort bool
}

type entryHeap []*entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// push queues e on its connection and wakes its pump. Caller holds p.mu.
func (c *pconn) push(e *entry) {
	heap.Push(&c.h, e)
	c.wake()
}

// releaseAt makes a held or delayed entry due at now. Caller holds p.mu.
func (c *pconn) releaseAt(e *entry, now time.Time) {
	e.held = false
	if e.index < 0 {
		return
	}
	if e.at.After(now) {
		e.at = now
		heap.Fix(&c.h, e.index)
	}
	c.wake()
}

func (c *pconn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// due pops every entry of c whose time has come. Caller holds p.mu.
func (p *Proxy) due(c *pconn, now time.Time) (batch []*entry, wait time.Duration) {
	for c.h.Len() > 0 && !c.h[0].at.After(now) {
		e := heap.Pop(&c.h).(*entry)
		p.popped(e)
		batch = append(batch, e)
	}
	wait = -1
	if c.h.Len() > 0 {
		wait = c.h[0].at.Sub(now)
	}
	return batch, wait
}
