package core

import (
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// heldRooms returns records that some rank still holds; noteOnly those
// holding nothing that were never retired.
func heldRooms(h *History) (held, noteOnly []contract.RoomRecord) {
	all, _ := h.Snapshot()
	for _, rec := range all {
		if len(rec.Ranks) > 0 {
			held = append(held, rec)
		} else {
			noteOnly = append(noteOnly, rec)
		}
	}
	return held, noteOnly
}

// checkClean asserts the fixed engine's end state: every room terminal then
// cleared on both sides, no queue or page held, and one outcome per request.
func (r *rig) checkClean() {
	t := r.t
	t.Helper()
	for side, h := range map[string]*History{"prefill": r.ph, "decode": r.dh} {
		held, noteOnly := heldRooms(h)
		for _, rec := range held {
			t.Errorf("%s room %d still held: state %s ranks %v events %+v", side, rec.Room, rec.State, rec.Ranks, rec.Events)
		}
		for _, rec := range noteOnly {
			t.Errorf("%s room %d: note-only record never retired: %+v", side, rec.Room, rec.Events)
		}
	}
	if b, w, i := r.p.QueueLens(); b+w+i != 0 {
		t.Errorf("prefill queues bootstrap=%d waiting=%d inflight=%d, want 0", b, w, i)
	}
	for rank := range r.d.Ranks() {
		l := r.d.Lens(rank)
		if l.Prealloc+l.Transfer+l.Running+l.PagesUsed+l.AwaitingAck != 0 {
			t.Errorf("decode rank %d lens %+v, want all zero", rank, l)
		}
	}
	for rank := range r.p.Ranks() {
		if r.p.Dead(rank) {
			t.Errorf("prefill rank %d bootstrap loop dead", rank)
		}
		if n := len(r.p.ranks[rank].status.Rooms()); n != 0 {
			t.Errorf("prefill rank %d status table holds %d rooms", rank, n)
		}
	}
	if r.d.Hung() || r.hangs > 0 {
		t.Errorf("decode hung (%d hang steps)", r.hangs)
	}
	if len(r.ctlErrs) > 0 {
		t.Errorf("OnControl errors: %v", r.ctlErrs)
	}
	for rid := range r.rids {
		if r.p.byRid[rid] != nil || r.d.byRid[rid] != nil {
			t.Errorf("%s still known: prefill=%v decode=%v", rid, r.p.byRid[rid] != nil, r.d.byRid[rid] != nil)
		}
	}
	r.checkOutcomes()
}

// finish lets the script play out: settle, then move time far past every
// timeout twice, settling each time.
func (r *rig) finish() {
	r.settle()
	for range 3 {
		r.advance(3 * testTimeout)
		r.settle()
	}
}

// checkOutcomes asserts that each rid added on prefill finished exactly once
// there, and each rid added on decode ended exactly once (Done or Finish).
func (r *rig) checkOutcomes() {
	r.t.Helper()
	for rid := range r.onP {
		if n := len(r.pfin[rid]); n != 1 {
			r.t.Errorf("%s: %d prefill finishes (first %v), want 1", rid, n, firstErr(r.pfin[rid]))
		}
	}
	for rid := range r.onD {
		if n := r.done[rid] + len(r.dfin[rid]); n != 1 {
			r.t.Errorf("%s: %d decode outcomes (done=%d, %d finishes, first %v), want 1", rid, n, r.done[rid], len(r.dfin[rid]), firstErr(r.dfin[rid]))
		}
	}
}

// checkAnswer asserts rid completed on decode with model.Expected.
func (r *rig) checkAnswer(rid string) {
	r.t.Helper()
	want := model.Expected(r.rids[rid], r.maxNew[rid])
	got := ""
	if b := r.answer[rid]; b != nil {
		got = b.String()
	}
	if r.done[rid] != 1 || got != want {
		r.t.Errorf("%s: answer %q (done=%d, finishes %v), want %q", rid, got, r.done[rid], r.dfin[rid], want)
	}
}

func firstErr(errs []error) any {
	if len(errs) == 0 {
		return "none"
	}
	return errs[0]
}
