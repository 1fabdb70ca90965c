package sim

import (
	"container/heap"
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
// that draw is the scheduler's choice among runnable actors.
type event struct {
	at    time.Duration
	key   uint64
	seq   uint64
	actor string
	fn    func()
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
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

// at queues fn for actor at offset t (not before now).
func (w *world) at(t time.Duration, actor string, fn func()) {
	w.seq++
	heap.Push(&w.q, &event{at: max(t, w.now), key: w.rng.Uint64(), seq: w.seq, actor: actor, fn: fn})
}

// after queues fn for actor d from now.
func (w *world) after(d time.Duration, actor string, fn func()) { w.at(w.now+d, actor, fn) }

// runUntil runs due events in order until none is due by end; the clock
// then stands at end.
func (w *world) runUntil(end time.Duration, stop func() bool) {
	for w.q.Len() > 0 && w.q[0].at <= end {
		e := heap.Pop(&w.q).(*event)
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
