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
// A fault on a KV link (or a network or protocol fault whose link its name
// does not give) during the room's life excuses it: bytes forwarded before
// a reset are read by decode after prefill saw the write fail and sent the
// acknowledgement on another connection. Records past
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
// its writer saw it fail overlapped [from, to]: one on a KV link, or a
// network or protocol fault whose link its name does not give.
func (v *View) kvFaultDuring(from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		if f.Layer != faults.LayerNetwork && f.Layer != faults.LayerProtocol {
			continue
		}
		if link := faultLink(f.Fault); link == "" || strings.HasPrefix(link, "kv/") {
			return true
		}
	}
	return false
}
