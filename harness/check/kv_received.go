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
// Success: cleared, or holding an event at or after it, and on neither
// side past contract.MaxRoomEvents. A decode process killed before the
// harness read its last state leaves an older copy, or none: then the
// Success is judged only when that process was killed (sigkill of decode)
// after its last word on the room (or after prefill opened it, with no
// record) and at least killAckMargin before the Success, so no
// acknowledgement it wrote before dying can be the one prefill read.
func (v *View) successesUnreceived(recs map[string]map[uint64]contract.RoomRecord) []string {
	pre, dec := recs[contract.SidePrefill], recs[contract.SideDecode]
	var out []string
	for _, id := range sortedRooms(pre) {
		p := pre[id]
		d, ok := dec[id]
		if nonClear(p.Events) >= contract.MaxRoomEvents || ok && nonClear(d.Events) >= contract.MaxRoomEvents {
			continue
		}
		named := map[int]bool{}
		for _, e := range sortedEvents(p.Events) {
			if e.Kind != contract.RoomEventStatus || e.State != contract.StateSuccess || named[e.Rank] {
				continue
			}
			// Decode's part of the same request: a room reused by a retry
			// holds several lives, and a decode killed during this one may
			// have left only an earlier life's record.
			des, cleared, has := d.Events, d.Cleared, ok
			last := p.Created // no decode record: nothing newer is known of it
			if rid, start := lifeOf(p.Events, e.At); rid != "" && ok {
				des, cleared, has = lifeEvents(d.Events, rid, cleared)
				if !has {
					last = start
				}
			}
			in := false
			for _, de := range des {
				if de.Rank == e.Rank && (de.Kind == contract.RoomEventKVReceived || de.Kind == contract.RoomEventStatus && de.State == contract.StateSuccess) {
					in = true
				}
				if de.At.After(last) {
					last = de.At
				}
			}
			if in {
				continue
			}
			why := fmt.Sprintf("decode's history: %s", historyLine(d.Events, d.Created))
			if !has {
				why = "decode has no record of the room"
				if ok {
					why = "decode has no record of the request in the room"
				}
			}
			if !cleared && last.Before(e.At) {
				kill, dead := v.decodeKilledBetween(last, e.At.Add(-killAckMargin))
				if !dead {
					continue
				}
				why = fmt.Sprintf("decode's process was killed at %s (%s), before it; %s", kill.at.Format("15:04:05.000"), kill.name, why)
			}
			named[e.Rank] = true
			out = append(out, fmt.Sprintf("room %d rank %d: prefill wrote Success at %s (%s), but decode never held the room's KV on that rank (no %s there); %s",
				id, e.Rank, e.At.Format("15:04:05.000"), e.Detail, contract.RoomEventKVReceived, why))
		}
	}
	return out
}

// lifeOf is the rid of the request whose life in the room at holds, from
// the side's latest request creation at or before it, and when that began;
// "" when the record names none.
func lifeOf(es []contract.Event, at time.Time) (string, time.Time) {
	rid, start := "", time.Time{}
	for _, e := range sortedEvents(es) {
		if e.At.After(at) {
			break
		}
		if r, ok := contract.CreatedRid(e.Detail); ok && createsRequest(e) {
			rid, start = r, e.At
		}
	}
	return rid, start
}

// lifeEvents is the part of a record that belongs to request rid: from its
// creation to the next request's. has is false when the record never
// created rid (then ended is false: nothing is known of its end); ended is
// true when a later request followed it (its life is over, as if cleared),
// else cleared as given.
func lifeEvents(es []contract.Event, rid string, cleared bool) (out []contract.Event, ended, has bool) {
	in := false
	for _, e := range sortedEvents(es) {
		if r, ok := contract.CreatedRid(e.Detail); ok && createsRequest(e) {
			if in && r != rid {
				return out, true, true
			}
			in = in || r == rid
		}
		if in {
			out = append(out, e)
		}
	}
	if !in {
		return nil, false, false // nothing of this life is known, ended or not
	}
	return out, cleared, true
}

// killAckMargin is how long after a decode process was sent SIGKILL an
// acknowledgement it wrote before dying may still reach prefill and be
// recorded: bytes already in the socket's send buffer are delivered, and a
// loaded prefill reads them late.
const killAckMargin = 500 * time.Millisecond

type killAt struct {
	at   time.Time
	name string
}

// decodeKilledBetween returns the first applied sigkill of decode that
// started in (from, to].
func (v *View) decodeKilledBetween(from, to time.Time) (killAt, bool) {
	for _, f := range v.Faults {
		if !f.Applied || !killOf(f, contract.SideDecode) {
			continue
		}
		if at := v.Run.BaseWall.Add(f.Start); at.After(from) && !at.After(to) {
			return killAt{at: at, name: f.Fault}, true
		}
	}
	return killAt{}, false
}

// committedDisowned is successesUnreceived looked at from decode's side:
// decode took a room's KV as complete and decoded from it (RoomEventCommitted),
// and afterwards prefill failed the same request's transfer. On the fixed
// engine decode commits only after every chunk and the aux message after
// the last were acknowledged, which is when prefill writes Success; a
// prefill that fails the transfer after decode committed means decode
// served KV prefill disowned (a commit before the aux, say). Excused: a
// fault active over the room's life (widened by DefaultFaultMargin: a link
// reset can lose the aux's acknowledgement after decode applied it), a
// cancel or ABORT prefill took, and one of prefill's own backstops firing
// (timeouts-explained judges those). A Failed after a new request reopened
// the room on prefill is that request's, not this one's.
func (v *View) committedDisowned(recs map[string]map[uint64]contract.RoomRecord) []string {
	if v.Run.BaseWall.IsZero() {
		return nil
	}
	pre, dec := recs[contract.SidePrefill], recs[contract.SideDecode]
	boot := contract.LookupBackstop(contract.BackstopBootstrap)
	var out []string
	for _, id := range sortedRooms(dec) {
		d := dec[id]
		p, ok := pre[id]
		if !ok || nonClear(p.Events) >= contract.MaxRoomEvents || nonClear(d.Events) >= contract.MaxRoomEvents {
			continue
		}
		for _, c := range sortedEvents(d.Events) {
			if c.Kind != contract.RoomEventCommitted {
				continue
			}
			if f, ok := disownedAfter(p, c.At, boot); ok {
				from, to := minTime(p.Created, d.Created).Sub(v.Run.BaseWall)-DefaultFaultMargin, f.At.Sub(v.Run.BaseWall)+DefaultFaultMargin
				if v.faultDuring(from, to) {
					continue
				}
				out = append(out, fmt.Sprintf("room %d: decode committed its KV at %s and decoded, then prefill rank %d failed the transfer at %s (%s); prefill's history: %s",
					id, c.At.Format("15:04:05.000"), f.Rank, f.At.Format("15:04:05.000"), f.Detail, historyLine(p.Events, p.Created)))
			}
			break // one finding per room
		}
	}
	return out
}

// disownedAfter returns prefill's first Failed status on p after the
// commit at c that belongs to the request decode committed: none if
// prefill reopened the room for another request first (a creation event,
// boot.StartsClock), or took a cancel, an ABORT or one of its backstops
// fired on the room before it.
func disownedAfter(p contract.RoomRecord, c time.Time, boot contract.Backstop) (contract.Event, bool) {
	for _, e := range sortedEvents(p.Events) {
		if e.Kind == contract.RoomEventAbortRequest || e.Kind == contract.RoomEventAbortReceived {
			return contract.Event{}, false
		}
		for _, b := range contract.Backstops() {
			if b.Role == contract.SidePrefill && b.FiredBy(e) {
				return contract.Event{}, false
			}
		}
		if !e.At.After(c) {
			continue
		}
		if boot.StartsClock(e) {
			return contract.Event{}, false
		}
		if e.Kind == contract.RoomEventStatus && e.State == contract.StateFailed {
			return e, true
		}
	}
	return contract.Event{}, false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) && !b.IsZero() || a.IsZero() {
		return b
	}
	return a
}
