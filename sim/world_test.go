package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The event heap pops, at every pop, the least queued event by (at, key,
// seq), with pushes and pops interleaved as a run makes them.
func TestEventHeapOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	cmp := func(a, b event) int {
		if a.before(&b) {
			return -1
		}
		if b.before(&a) {
			return 1
		}
		return 0
	}
	var h eventHeap
	var pending []event
	pop := func() {
		want := slices.MinFunc(pending, cmp)
		if got := h.pop(); got != want {
			t.Fatalf("popped %+v, the least queued is %+v", got, want)
		}
		pending = slices.DeleteFunc(pending, func(e event) bool { return e == want })
	}
	for i := range 3000 {
		e := event{at: time.Duration(rng.IntN(50)), key: uint64(rng.IntN(4)), seq: uint64(i), job: int32(i)}
		h.push(e)
		pending = append(pending, e)
		if rng.IntN(3) == 0 {
			pop()
		}
	}
	for len(pending) > 0 {
		pop()
	}
	if len(h) != 0 {
		t.Fatalf("%d events left after every queued one popped", len(h))
	}
}
