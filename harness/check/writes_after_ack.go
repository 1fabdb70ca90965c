package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// writesAfterAck lists decode ranks that took a KV chunk of a room after
// that rank's prefill acknowledged the room's ABORT. The ABORT_ACK is
// prefill's word that no write of the room is in flight any more (it is
// deferred until the transfer worker's held chunk drains), and decode frees
// the room's pages on it: a chunk after it is a write prefill started
// after the ABORT, and on RDMA it lands in pages another request may own.
//
// A fault that can deliver a write late during the room's life excuses
// it (kvFaultDuring): bytes forwarded before a reset are read by decode
// after prefill saw the write fail and sent the acknowledgement on another
// connection. Judged within one life of the room on decode: a request
// created in it since the acknowledgement starts a new one. Records past
// contract.MaxRoomEvents are not judged (the acknowledgement may be lost).
func (v *View) writesAfterAck(dec map[uint64]contract.RoomRecord, ev map[string]int64) []string {
	var out []string
	for _, id := range sortedRooms(dec) {
		r := dec[id]
		if nonClear(r.Events) >= contract.MaxRoomEvents {
			continue
		}
		acked := map[int]time.Time{}
		for _, e := range sortedEvents(r.Events) {
			if createsRequest(e) {
				// A new request in the room (a client retrying in its own
				// room): an earlier life's acknowledgement promises nothing
				// about this one's writes.
				delete(acked, e.Rank)
				continue
			}
			switch e.Kind {
			case contract.RoomEventAbortAck:
				if _, ok := acked[e.Rank]; !ok {
					acked[e.Rank] = e.At
				}
			case contract.RoomEventStrayChunk:
				at, ok := acked[e.Rank]
				if !ok || !e.At.After(at) {
					continue
				}
				if v.kvFaultDuring(r.Created.Sub(v.Run.BaseWall), e.At.Sub(v.Run.BaseWall)) {
					ev["writes_after_ack_excused"]++
					continue
				}
				ev["writes_after_ack"]++
				out = append(out, fmt.Sprintf("room %d rank %d: decode took a KV write at %v (%s), %v after prefill acknowledged the room's ABORT (the acknowledgement promises no write in flight; decode frees the pages on it); decode history: %s",
					id, e.Rank, e.At.Sub(v.Run.BaseWall).Round(time.Millisecond), e.Detail, e.At.Sub(at).Round(time.Microsecond), historyLine(r.Events, v.Run.BaseWall)))
				delete(acked, e.Rank) // one finding per rank and room
			}
		}
	}
	return out
}

// kvFaultDuring reports whether a fault that can deliver a KV write after
// the acknowledgement overlapped [from, to]: one on a KV link, or a
// network or protocol fault whose link its name does not give (bytes
// forwarded before a reset, read late); a process stopped or killed (a
// stopped decode reads the chunks in its socket late; a restarted prefill
// acknowledges for writes its predecessor left in flight); decode's
// scheduler stalled.
func (v *View) kvFaultDuring(from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		n := faults.ReadName(f.Fault)
		switch f.Layer {
		case faults.LayerProcess:
			return true
		case faults.LayerEngine:
			if n.Role == contract.SideDecode {
				return true
			}
		case faults.LayerNetwork, faults.LayerProtocol:
			if n.Link == "" || strings.HasPrefix(n.Link, "kv/") {
				return true
			}
		}
	}
	return false
}

// writesAfterFailure lists decode ranks that took a KV chunk of a room
// more than DefaultRaceWindow (plus the engine's kv_write_latency) after
// the matching prefill rank had recorded
// the room Failed (decode's ABORT taken, the client's abort, a deadline):
// prefill looks at the room again after its transfer worker's pause gate,
// so only a write already under way when the room failed may still land,
// and that one lands within moments. A chunk long after is a write prefill
// began on a room it knew had failed.
//
// Judged only within one life of the room on prefill (no request created
// for it between the failure and the chunk) and only when nothing that
// can hold a write already under way was on when the room failed
// (writeHeldAt): a fault on a KV link, workers paused with their writes
// posted (pause-transfer-writes), a process stopped or killed, a stalled
// scheduler. Workers paused before sending, stalled bootstrap loops and
// faults on the control and notify links hold no write.
func (v *View) writesAfterFailure(pre, dec map[uint64]contract.RoomRecord, ev map[string]int64) []string {
	var out []string
	for _, id := range sortedRooms(dec) {
		d, p := dec[id], pre[id]
		if nonClear(d.Events) >= contract.MaxRoomEvents || nonClear(p.Events) >= contract.MaxRoomEvents {
			continue
		}
		var strays []contract.Event
		for _, e := range d.Events {
			if e.Kind == contract.RoomEventStrayChunk {
				strays = append(strays, e)
			}
		}
		if len(strays) == 0 {
			continue
		}
		named := map[int]bool{}
		for _, s := range sortedEvents(strays) {
			if named[s.Rank] {
				continue
			}
			// The life the write came in, as decode's record has it: prefill's
			// record may lack a later life of the room (a prefill killed
			// while it held the room takes that record with it), so its
			// failure in an earlier life must not be read as this one's.
			// Prefill may fail a new request a moment before decode opens
			// it (the router sends both at once): the race window.
			var lifeStart time.Time
			for _, e := range sortedEvents(d.Events) {
				if e.At.After(s.At) {
					break
				}
				if createsRequest(e) {
					lifeStart = e.At.Add(-DefaultRaceWindow)
				}
			}
			var failedAt time.Time
			for _, e := range sortedEvents(p.Events) {
				if e.At.After(s.At) {
					break
				}
				if createsRequest(e) {
					failedAt = time.Time{} // a new request: a new life
				}
				if e.Rank == s.Rank && e.Kind == contract.RoomEventStatus && e.State == contract.StateFailed && failedAt.IsZero() && !e.At.Before(lifeStart) {
					failedAt = e.At
				}
			}
			if failedAt.IsZero() || s.At.Sub(failedAt) <= DefaultRaceWindow+v.kvWriteLatency() {
				continue
			}
			base := v.Run.BaseWall
			if v.writeHeldAt(failedAt.Sub(base)) {
				ev["writes_after_failure_excused"]++
				continue
			}
			named[s.Rank] = true
			ev["writes_after_failure"]++
			out = append(out, fmt.Sprintf("room %d rank %d: decode took a KV write at %v (%s), %v after prefill's rank recorded the room Failed, with nothing that holds a write under way active: prefill began it knowing the room had failed; prefill history: %s; decode history: %s",
				id, s.Rank, s.At.Sub(base).Round(time.Millisecond), s.Detail, s.At.Sub(failedAt).Round(time.Millisecond), historyLine(p.Events, base), historyLine(d.Events, base)))
		}
	}
	return out
}

// writeHeldAt reports whether a fault that can hold a KV write already
// under way was on around offset failed, when the room failed: a write
// prefill posted before then lands late only if something held it then
// (see writesAfterFailure). One that began more than writeInFlight after
// the failure, or ended before it, held no write posted before it: that
// write had landed.
func (v *View) writeHeldAt(failed time.Duration) bool {
	for _, f := range v.Faults {
		inFlight := writeInFlight + v.kvWriteLatency()
		if !f.Applied || f.Start > failed+inFlight || (f.End != 0 && f.End < failed-inFlight) {
			continue
		}
		n := faults.ReadName(f.Fault)
		switch f.Layer {
		case faults.LayerClient:
			continue
		case faults.LayerNetwork, faults.LayerProtocol:
			if n.Link != "" && !strings.HasPrefix(n.Link, "kv/") || faults.DuplicatesOnly(f.Fault) {
				continue
			}
		case faults.LayerEngine, faults.LayerProcess:
			if !n.Can(faults.HoldsPostedWrites) {
				continue
			}
		}
		return true
	}
	return false
}

// writeInFlight bounds how long a KV write under way takes to land when
// nothing holds it, on a loaded machine: half the race window, plus the
// engine's modelled RDMA latency (kvWriteLatency).
const writeInFlight = DefaultRaceWindow / 2

// kvWriteLatency is the bundled engine's kv_write_latency: each KV write
// takes that long before it lands, so a write under way when its room
// failed may land that much later.
func (v *View) kvWriteLatency() time.Duration {
	if v.Run.Engine == nil {
		return 0
	}
	return v.Run.Engine.KVWriteLatency
}
