package core

import (
	"fmt"
	"testing"
)

// zeroTables fails unless every table of both sides is empty.
func (r *rig) zeroTables(when string) {
	r.t.Helper()
	for rank := range r.p.Ranks() {
		if got := r.p.Tables(rank); got != (Tables{}) {
			r.t.Errorf("%s: prefill rank %d tables %+v, want all 0", when, rank, got)
		}
	}
	for rank := range r.d.Ranks() {
		if got := r.d.Tables(rank); got != (Tables{}) {
			r.t.Errorf("%s: decode rank %d tables %+v, want all 0", when, rank, got)
		}
	}
}

// A finished request and an aborted one leave every table empty.
func TestTablesEmptyAfterRequests(t *testing.T) {
	t.Parallel()
	for _, ranks := range []int{1, 2} {
		t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ranks: ranks})
			r.zeroTables("fresh")
			r.add("a", 11, prompt(11, 60), 4)
			r.stepD()
			r.deliverControl()
			if got := r.p.Tables(0); got.Status != 1 || got.Infos != 1 || got.Records != 1 || got.OrphanRecords != 0 {
				t.Errorf("prefill with one room: %+v", got)
			}
			r.settle()
			r.add("b", 12, prompt(12, 60), 4)
			r.stepD()
			r.deliverControl()
			r.stepP()
			r.abortD("b")
			r.settle()
			r.zeroTables("after the drain")
		})
	}
}

// A worker holding an aborted room's chunk is busy, with the room's ACK
// (decode's abort) or failure notice (prefill's) pending; WorkerSend
// releases it and sends what waited.
func TestTablesWorkerHoldsAbortedChunk(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"decode abort", "prefill abort"} {
		t.Run(side, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			const room = 13
			r.add("c", room, prompt(3, 150), 4)
			r.stepD()
			r.deliverControl()
			r.stepP()
			w := workerOf(room)
			if c := r.begin(0, w); c == nil {
				t.Fatal("no chunk to hold")
			}
			want := Tables{WorkersBusy: 1, PendingAck: 1, Status: 1, Infos: 1, Records: 1}
			if side == "decode abort" {
				r.abortD("c")
				r.stepD()
				r.deliverControl()
			} else {
				r.abortP("c")
				r.stepP() // cleared; the failure notice waits for the chunk
				want = Tables{WorkersBusy: 1, PendingFail: 1}
			}
			if got := r.p.Tables(0); got != want {
				t.Fatalf("while the worker holds the chunk: %+v, want %+v", got, want)
			}
			if r.send(0, w) {
				t.Fatal("WorkerSend wrote a chunk of an aborted room")
			}
			if got := r.p.Tables(0); got.WorkersBusy != 0 || got.PendingAck != 0 || got.PendingFail != 0 {
				t.Fatalf("after WorkerSend released the chunk: %+v", got)
			}
			r.settle()
			r.zeroTables("after the drain")
		})
	}
}

// An ABORT and metadata for rooms prefill never gets: a tombstone with
// its note-only record and an orphan TransferInfo, both time-bounded and
// gone after their sweeps, never overdue. A sweep that kept them (as the
// tombstone-expired mutant does) leaves them overdue.
func TestTablesTimeBoundedEntries(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	wire := dialectOf("")
	r.ctl = append(r.ctl, DecodeOut{Bootstrap: testBootstrap, Frames: wire.Abort(Abort{Room: 70, DecodeIP: "10.0.0.2", DecodePort: 9100})},
		DecodeOut{Bootstrap: testBootstrap, Frames: wire.Metadata(Metadata{Room: 71, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: r.d.AgentName(0, testBootstrap), Pages: []uint32{1}})})
	r.deliverControl()
	r.stepP()
	if got, want := r.p.Tables(0), (Tables{Tombstones: 1, Status: 1, Infos: 1, Records: 2}); got != want {
		t.Fatalf("after the orphan ABORT and metadata: %+v, want %+v", got, want)
	}
	r.advance(testTimeout + 1)
	r.stepP() // the orphan info is swept
	if got, want := r.p.Tables(0), (Tables{Tombstones: 1, Records: 1}); got != want {
		t.Fatalf("after the bootstrap timeout: %+v, want %+v", got, want)
	}
	r.advance(3*testTimeout + 1)
	r.stepP() // the tombstone expires with its record
	r.zeroTables("after the tombstone TTL")

	// What a sweep that forgets to remove leaves: the same entries, past
	// their expiry at the last sweep.
	st := r.p.ranks[0].status
	st.tombstones[72] = r.now
	r.p.ranks[0].infos[73] = transferInfo{at: r.now}
	st.noteExpiry(r.now.Add(4*testTimeout+1), 4*testTimeout)
	if got := r.p.Tables(0); got.TombstonesOverdue != 1 || got.InfosOverdue != 1 {
		t.Fatalf("entries a sweep kept past their expiry: %+v, want 1 tombstone and 1 info overdue", got)
	}
}

// A record that no status entry and no tombstone will retire is an
// orphan: with abort-before-status the ABORT of an unknown room leaves no
// tombstone behind its note (as the status-tombstone mutant does).
func TestTablesOrphanRecord(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{reg: reg("abort-before-status")})
	wire := dialectOf("")
	r.ctl = append(r.ctl, DecodeOut{Bootstrap: testBootstrap, Frames: wire.Abort(Abort{Room: 70, DecodeIP: "10.0.0.2", DecodePort: 9100})})
	r.deliverControl()
	if got, want := r.p.Tables(0), (Tables{Records: 1, OrphanRecords: 1}); got != want {
		t.Fatalf("after an ABORT the table dropped: %+v, want %+v", got, want)
	}
}
