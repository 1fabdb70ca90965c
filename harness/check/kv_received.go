package check

import (
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// successesUnreceived lists the prefill ranks that wrote a room's Success
// while decode's matching rank never held the room's KV in full: no
// contract.RoomEventKVReceived and no Success on that rank in decode's
// record. Decode notes the KV in before it acknowledges the aux message
// that prefill's last write waits for, so prefill's Success without it is
// a failed or refused write taken as done: the request is then served
// from KV decode never got, or waits out decode's deadline, which a KV
// fault on the link would otherwise excuse.
//
// Judged only from a decode record that is complete up to prefill's
// Success: cleared, or holding an event at or after it (a decode process
// killed before the harness read its last state leaves an older copy),
// and on neither side past contract.MaxRoomEvents.
func successesUnreceived(recs map[string]map[uint64]contract.RoomRecord) []string {
	pre, dec := recs[contract.SidePrefill], recs[contract.SideDecode]
	var out []string
	for _, id := range sortedRooms(pre) {
		p := pre[id]
		d, ok := dec[id]
		if !ok || nonClear(p.Events) >= contract.MaxRoomEvents || nonClear(d.Events) >= contract.MaxRoomEvents {
			continue
		}
		in := map[int]bool{}
		var last time.Time
		for _, e := range d.Events {
			if e.Kind == contract.RoomEventKVReceived || e.Kind == contract.RoomEventStatus && e.State == contract.StateSuccess {
				in[e.Rank] = true
			}
			if e.At.After(last) {
				last = e.At
			}
		}
		named := map[int]bool{}
		for _, e := range sortedEvents(p.Events) {
			if e.Kind != contract.RoomEventStatus || e.State != contract.StateSuccess || in[e.Rank] || named[e.Rank] {
				continue
			}
			if !d.Cleared && last.Before(e.At) {
				continue
			}
			named[e.Rank] = true
			out = append(out, fmt.Sprintf("room %d rank %d: prefill wrote Success at %s (%s), but decode never held the room's KV on that rank (no %s there); decode's history: %s",
				id, e.Rank, e.At.Format("15:04:05.000"), e.Detail, contract.RoomEventKVReceived, historyLine(d.Events, d.Created)))
		}
	}
	return out
}
