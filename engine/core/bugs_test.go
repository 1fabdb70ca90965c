package core

import (
	"testing"
	"time"
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

// The cleared list keeps exactly the last Keep rooms, oldest first, and
// forgets the rest (Known, late notes) however many rooms go through it.
func TestHistoryKeepsLastClearedRooms(t *testing.T) {
	t.Parallel()
	const keep = 5
	h := NewHistory(keep)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const total = 3*keep + 2 // past two compactions of the dead prefix
	for room := uint64(1); room <= total; room++ {
		h.Add(now, room, "decode", 0, "status", Bootstrapping, "created")
		h.Clear(now, room, "decode", 0, Success, "done")
		_, cleared := h.Snapshot()
		want := min(int(room), keep)
		if len(cleared) != want {
			t.Fatalf("after %d rooms: %d cleared kept, want %d", room, len(cleared), want)
		}
		for i, rec := range cleared {
			if w := room - uint64(len(cleared)-1-i); rec.Room != w {
				t.Fatalf("after %d rooms: cleared[%d] is room %d, want %d", room, i, rec.Room, w)
			}
		}
	}
	for room := uint64(1); room <= total; room++ {
		if want := room > total-keep; h.Known(room) != want {
			t.Errorf("Known(%d) = %v, want %v", room, !want, want)
		}
	}
	if h.NoteEnded(now, 1, "decode", 0, "ack", "late") {
		t.Error("a late note attached to room 1, which was forgotten")
	}
	if !h.NoteEnded(now, total, "decode", 0, "ack", "late") {
		t.Errorf("a late note did not attach to room %d, which is kept", total)
	}
}

// A room prefill has finished is not free while its workers still hold or
// queue chunks of it: a new request in that room (a client retrying with
// the same bootstrap room) reset the room's status, and the worker then
// wrote the old request's chunks into the new request's room and marked it
// Transferring (found by room-retries seed 1624 in the simulator). Prefill
// refuses the room until the old chunks have drained, then takes it.
func TestPrefillRoomNotReusedWhileItsChunksDrain(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	const room = 91
	r.add("old", room, prompt(91, 200), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(room)
	if r.begin(0, w) == nil || !r.send(0, w) {
		t.Fatal("old's first chunk not sent")
	}
	if !r.p.Pending(0, w) {
		t.Fatal("want more of old's chunks queued behind the one in flight")
	}
	r.abortP("old")
	r.stepP() // prefill finishes old while its write is in flight
	if got := r.pfin["old"]; len(got) != 1 || got[0] == nil {
		t.Fatalf("old's finishes on prefill: %v, want one failure", got)
	}
	if err := r.p.Add(r.now, "new", room, nil); err == nil {
		t.Fatal("prefill took a new request in a room whose old chunks are still held and queued")
	}
	r.end(0, w, nil)
	if err := r.p.Add(r.now, "new", room, nil); err == nil {
		t.Fatal("prefill took a new request in a room whose old chunks are still queued")
	}
	if r.begin(0, w) != nil {
		t.Fatal("the worker took a chunk of a room prefill failed")
	}
	if err := r.p.Add(r.now, "new", room, nil); err != nil {
		t.Fatalf("room not free once its old chunks drained: %v", err)
	}
}
