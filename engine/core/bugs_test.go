package core

import (
	"testing"
)

// Bugs the scripted driver found in the fixed core, each kept as a test
// that it stays fixed.

// A transfer that decode learns failed from prefill must leave decode's
// transfer queue once and report one finish.
func TestDecodeFailedTransferLeavesQueue(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.add("f", 111, prompt(111, 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortP("f") // prefill-side abort: prefill tells decode the room failed
	r.stepP()
	r.deliverNotices()
	for range 5 {
		r.stepD()
	}
	if r.d.Lens(0).Transfer != 0 || len(r.dfin["f"]) != 1 || r.d.TransferFailed != 1 {
		t.Fatalf("failed transfer: transfer queue %d, finishes %d, TransferFailed %d; want 0, 1, 1",
			r.d.Lens(0).Transfer, len(r.dfin["f"]), r.d.TransferFailed)
	}
	r.finish()
	r.checkClean()
}

// Prefill must not tell decode a room failed while one of its writes to the
// room's pages is still in flight: decode frees on that notice.
func TestPrefillFailureWaitsForInFlightWrite(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		fail func(r *rig)
	}{
		{"prefill-abort", func(r *rig) { r.abortP("A") }},
		{"inflight-timeout", func(r *rig) { r.advance(testTimeout + 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			const roomA, roomB = 71, 82
			r.add("A", roomA, prompt(71, 100), 4)
			r.stepD()
			r.deliverControl()
			r.stepP()
			w := workerOf(roomA)
			cA := r.begin(0, w)
			if !r.send(0, w) {
				t.Fatal("A's chunk not sent")
			}
			tc.fail(r)
			r.stepP()          // A fails and is cleared while its write is in flight
			r.deliverNotices() // the notice socket beats the KV stream
			r.stepD()
			r.add("B", roomB, prompt(72, 100), 6)
			r.stepD()
			r.deliverControl()
			r.stepP()
			r.runWorkers()
			r.land(cA) // A's write lands
			r.end(0, w, errRefused)
			r.settle()
			r.checkAnswer("B")
			r.finish()
			r.checkClean()
		})
	}
}

// A note about a room nobody holds (an ACK after decode released the room,
// a stray chunk, an ABORT for a room that never existed) must not leave a
// record that /debug/rooms lists as held forever.
func TestHistoryNoteOnlyRecordsRetire(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	scriptAbortInTransfer(r) // decode releases the room, then prefill's ACK arrives
	r.finish()
	if _, noteOnly := heldRooms(r.dh); len(noteOnly) > 0 {
		for _, rec := range noteOnly {
			t.Errorf("decode room %d never retired; events: %+v", rec.Room, rec.Events)
		}
	}
	r.checkClean()
}
