package core

import "testing"

// Posted writes: a worker takes up to PostedWrites chunks of one room at
// once; they may land on decode in any order, and the room succeeds only
// when the batch with its last chunk ends. The answer stays exact.
func TestPostedWritesLandOutOfOrder(t *testing.T) {
	t.Parallel()
	const posted = 3
	r := newRig(t, rigOpts{posted: posted})
	room := uint64(4000)
	w := workerOf(room)
	r.add("req", room, prompt(7, 300), 6) // 300 tokens: 10 chunks of 32
	for range maxRounds {
		r.deliverControl()
		r.stepP()
		if r.p.Pending(0, w) {
			break
		}
		r.deliverNotices()
		r.stepD()
	}
	if !r.p.Pending(0, w) {
		t.Fatal("no chunks queued for the room")
	}
	batches := 0
	for r.p.Pending(0, w) {
		batch := r.p.WorkerBeginPosted(r.now, 0, w)
		if len(batch) == 0 || len(batch) > posted {
			t.Fatalf("batch of %d chunks, want 1..%d", len(batch), posted)
		}
		for i, c := range batch {
			if c.Room != room || c.ID != batch[0].ID+i {
				t.Fatalf("batch %d: chunk %d is room %d id %d, want room %d id %d", batches, i, c.Room, c.ID, room, batch[0].ID+i)
			}
		}
		if !r.p.WorkerSend(r.now, 0, w) {
			t.Fatal("WorkerSend refused a live room's batch")
		}
		for i := len(batch) - 1; i >= 0; i-- { // completions in reverse order
			c := batch[i]
			if !r.d.OnChunk(r.now, c.Rank, c.Room, c.ID, c.Last, c.Pages, c.First, c.Payload) {
				t.Fatalf("decode refused chunk %d", c.ID)
			}
		}
		last := batch[len(batch)-1].Last
		if s := r.p.poll(room); s == Success {
			t.Fatalf("batch %d: room Success before its writes ended", batches)
		}
		if last {
			r.d.OnAux(r.now, 0, room)
		}
		r.p.WorkerEnd(r.now, 0, w, nil)
		r.collect()
		if got := r.p.poll(room); last != (got == Success) {
			t.Fatalf("batch %d (last %v) ended: room %v", batches, last, got)
		}
		batches++
	}
	if batches != 4 { // 10 chunks by 3
		t.Fatalf("%d batches, want 4", batches)
	}
	r.settle()
	r.checkAnswer("req")
	r.checkClean()
}

// An ABORT while a batch is held: WorkerSend releases the whole batch
// unwritten, and nothing of it is held afterwards.
func TestPostedWritesAbortReleasesBatch(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{posted: 4})
	room := uint64(4001)
	w := workerOf(room)
	r.add("req", room, prompt(8, 300), 6)
	for range maxRounds {
		r.deliverControl()
		r.stepP()
		if r.p.Pending(0, w) {
			break
		}
		r.deliverNotices()
		r.stepD()
	}
	batch := r.p.WorkerBeginPosted(r.now, 0, w)
	if len(batch) != 4 {
		t.Fatalf("batch of %d, want 4", len(batch))
	}
	r.abortP("req")
	if r.p.WorkerSend(r.now, 0, w) {
		t.Fatal("WorkerSend wrote a batch of an aborted room")
	}
	if r.p.holding(0, room) || len(r.p.ranks[0].posted) != 0 {
		t.Fatal("the aborted room's batch is still held")
	}
	r.settle()
	r.checkClean()
}
