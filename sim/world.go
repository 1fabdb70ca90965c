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
// seq) orders events totally, so the queue's shape never shows. What runs
// is in the world's jobs[job]: the heap itself holds no pointers, so
// moving events costs the collector nothing.
type event struct {
	at  time.Duration
	key uint64
	seq uint64
	job int32
}

// job is what an event does: fn, or m's arrival on l (no closure per
// message).
type job struct {
	fn func()
	m  *msg
	l  *link
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

// eventHeap is a 4-ary min-heap of events by value: a run queues tens of
// thousands, and container/heap's interface calls and one allocation per
// event were a tenth of a run's time.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = e
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	n := len(q) - 1
	e := q[n]
	q = q[:n]
	*h = q
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c // the least child
		for k := c + 1; k < min(c+4, n); k++ {
			if q[k].before(&q[m]) {
				m = k
			}
		}
		if !q[m].before(&e) {
			break
		}
		q[i] = q[m]
		i = m
	}
	q[i] = e
	return top
}

// world is the scheduler, the virtual clock and the trace of one run.
type world struct {
	rng   *rand.Rand
	now   time.Duration
	q     eventHeap
	jobs  []job   // by event.job
	free  []int32 // jobs slots no event holds
	seq   uint64
	steps int64
	trace *strings.Builder // nil: not tracing
	// done ends the run early (Ctrl-C): once it is closed runUntil runs
	// no more events, so virtual time races to the end and every loop
	// driving it finishes.
	done        <-chan struct{}
	interrupted bool
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
func (w *world) at(t time.Duration, actor string, fn func()) { w.queue(t, job{fn: fn}) }

// arriveAt queues m's arrival on l at t, as at queues a step.
func (w *world) arriveAt(t time.Duration, l *link, m *msg) { w.queue(t, job{m: m, l: l}) }

func (w *world) queue(t time.Duration, j job) {
	w.seq++
	var slot int32
	if n := len(w.free); n > 0 {
		slot, w.free = w.free[n-1], w.free[:n-1]
		w.jobs[slot] = j
	} else {
		slot = int32(len(w.jobs))
		w.jobs = append(w.jobs, j)
	}
	w.q.push(event{at: max(t, w.now), key: w.rng.Uint64(), seq: w.seq, job: slot})
}

// after queues fn for actor d from now.
func (w *world) after(d time.Duration, actor string, fn func()) { w.at(w.now+d, actor, fn) }

// runUntil runs due events in order until none is due by end; the clock
// then stands at end.
func (w *world) runUntil(end time.Duration, stop func() bool) {
	for len(w.q) > 0 && w.q[0].at <= end && !w.interrupted {
		if w.steps&0x3ff == 0 && w.done != nil {
			select {
			case <-w.done:
				w.interrupted = true
				continue
			default:
			}
		}
		e := w.q.pop()
		j := w.jobs[e.job]
		w.jobs[e.job] = job{} // let the collector have what it held
		w.free = append(w.free, e.job)
		w.now = e.at
		w.steps++
		if j.m != nil {
			w.arrive(j.l, j.m)
		} else {
			j.fn()
		}
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
