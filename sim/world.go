package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
)

// epoch is the virtual wall time a run starts at: fixed, so room records'
// timestamps (wall clock in the live engine) are the same on every replay.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one due actor step. Events due at the same instant run in the
// order of key, drawn from the run's generator when the event is queued:
// that draw is the scheduler's choice among runnable actors. (at, key,
// seq) orders events totally, so the queue's shape never shows.
type event struct {
	at  time.Duration
	key uint64
	seq uint64
	fn  func()
}

func (e *event) before(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	if e.key != o.key {
		return e.key < o.key
	}
	return e.seq < o.seq
}

// eventHeap is a binary min-heap of events by value: a run queues tens of
// thousands, and container/heap's interface calls and one allocation per
// event were a tenth of a run's time.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(&q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	q := *h
	e := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = event{} // drop the closure for the collector
	q = q[:n]
	*h = q
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q[c+1].before(&q[c]) {
			c++
		}
		if !q[c].before(&q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	return e
}

// world is the scheduler, the virtual clock and the trace of one run.
type world struct {
	rng   *rand.Rand
	now   time.Duration
	q     eventHeap
	seq   uint64
	steps int64
	trace *strings.Builder // nil: not tracing
}

// scenarioStream hashes a scenario name into the PCG stream, so two
// scenarios run with one seed still draw differently (CONVENTIONS 7).
func scenarioStream(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func newWorld(seed uint64, name string, trace bool) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, scenarioStream(name)))}
	if trace {
		w.trace = &strings.Builder{}
	}
	return w
}

// wall is the virtual wall clock the core is handed.
func (w *world) wall() time.Time { return epoch.Add(w.now) }

// at queues fn for actor at offset t (not before now). The actor names
// who runs fn, for readers; the trace lines fn writes name it again.
func (w *world) at(t time.Duration, actor string, fn func()) {
	w.seq++
	w.q.push(event{at: max(t, w.now), key: w.rng.Uint64(), seq: w.seq, fn: fn})
}

// after queues fn for actor d from now.
func (w *world) after(d time.Duration, actor string, fn func()) { w.at(w.now+d, actor, fn) }

// runUntil runs due events in order until none is due by end; the clock
// then stands at end.
func (w *world) runUntil(end time.Duration, stop func() bool) {
	for len(w.q) > 0 && w.q[0].at <= end {
		e := w.q.pop()
		w.now = e.at
		w.steps++
		e.fn()
		if stop != nil && stop() {
			return
		}
	}
	w.now = max(w.now, end)
}

// tracef writes one trace line: virtual time, actor, what happened.
func (w *world) tracef(actor, format string, a ...any) {
	if w.trace == nil {
		return
	}
	fmt.Fprintf(w.trace, "%12.6fs %-14s ", w.now.Seconds(), actor)
	fmt.Fprintf(w.trace, format, a...)
	w.trace.WriteByte('\n')
}

// between draws a duration uniformly in [lo, hi].
func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

// chance is true with probability p.
func (w *world) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }
