package core

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// History keeps every held room's record and the last Keep cleared ones, so
// an operator can see how a room got stuck or how it ended.
type History struct {
	Keep      int
	MaxEvents int
	rooms     map[uint64]*contract.RoomRecord
	// cleared[head:] are the kept cleared records, oldest first; the
	// dead prefix is dropped once it is as long as Keep, so retiring a
	// room costs O(1) amortized instead of a copy of Keep pointers.
	cleared   []*contract.RoomRecord
	head      int
	byCleared map[uint64]*contract.RoomRecord
	// recorded counts every event the engine wrote, by kind, kept or not:
	// what a branch wrote, as its probe's hits say it ran
	// (contract.Probe.Records), whatever the history could keep.
	recorded map[string]int64
}

// NewHistory returns a history keeping keep cleared rooms.
func NewHistory(keep int) *History {
	if keep <= 0 {
		keep = 1000
	}
	return &History{Keep: keep, MaxEvents: contract.MaxRoomEvents, rooms: map[uint64]*contract.RoomRecord{}, byCleared: map[uint64]*contract.RoomRecord{}, recorded: map[string]int64{}}
}

// lateNote attaches an event for a room no rank holds to its cleared record,
// if it has one, instead of opening a record nothing will retire.
func (h *History) lateNote(room uint64, e contract.Event) bool {
	if _, held := h.rooms[room]; held {
		return false
	}
	r, ok := h.byCleared[room]
	if !ok {
		return false
	}
	if len(r.Events) < h.MaxEvents {
		r.Events = append(r.Events, e)
	}
	r.Updated = e.At
	return true
}

func (h *History) record(now time.Time, room uint64, side string) *contract.RoomRecord {
	r, ok := h.rooms[room]
	if !ok {
		r = &contract.RoomRecord{Room: room, Side: side, Ranks: map[int]string{}, Created: now}
		h.rooms[room] = r
	}
	return r
}

// Recorded returns how many events of each kind the engine wrote since
// the history began, those it did not keep too.
func (h *History) Recorded() map[string]int64 {
	if h == nil {
		return nil
	}
	return maps.Clone(h.recorded)
}

// Add records an event. Status events update the room's state.
func (h *History) Add(now time.Time, room uint64, side string, rank int, kind string, s KVPoll, detail string) {
	if h == nil {
		return
	}
	h.recorded[kind]++
	if kind != "status" && h.lateNote(room, contract.Event{At: now, Side: side, Rank: rank, Kind: kind, State: s.String(), Detail: detail}) {
		return
	}
	r := h.record(now, room, side)
	if kind == "status" {
		r.Ranks[rank] = s.String()
		r.State = s.String()
	}
	r.Updated = now
	if len(r.Events) < h.MaxEvents {
		r.Events = append(r.Events, contract.Event{At: now, Side: side, Rank: rank, Kind: kind, State: s.String(), Detail: detail})
	}
}

// Known reports whether the history has a record of room, held or
// recently cleared. Notes about rooms a peer made up (stray or malformed
// KV writes) are kept only for known rooms, so a hostile peer naming a new
// room with every message cannot grow the history without bound.
func (h *History) Known(room uint64) bool {
	if h == nil {
		return false
	}
	_, held := h.rooms[room]
	_, cleared := h.byCleared[room]
	return held || cleared
}

// NoteKnown records an event that does not change status on a room the
// history knows (Known); one about a room it does not know is counted
// (Recorded) and not kept.
func (h *History) NoteKnown(now time.Time, room uint64, side string, rank int, kind, detail string) {
	if h == nil {
		return
	}
	if !h.Known(room) {
		h.recorded[kind]++
		return
	}
	h.Note(now, room, side, rank, kind, detail)
}

// Note records an event that does not change status.
func (h *History) Note(now time.Time, room uint64, side string, rank int, kind, detail string) {
	if h == nil {
		return
	}
	h.recorded[kind]++
	if h.lateNote(room, contract.Event{At: now, Side: side, Rank: rank, Kind: kind, State: contract.StateCleared, Detail: detail}) {
		return
	}
	r := h.record(now, room, side)
	r.Updated = now
	if len(r.Events) < h.MaxEvents {
		r.Events = append(r.Events, contract.Event{At: now, Side: side, Rank: rank, Kind: kind, State: r.State, Detail: detail})
	}
}

// NoteBackstop records that the named backstop (contract.Backstops) fired
// on a room, with the event kind and detail its table entry gives, so the
// checkers read back exactly what the engine wrote.
func (h *History) NoteBackstop(now time.Time, room uint64, side string, rank int, name string) {
	b := contract.LookupBackstop(name)
	h.Note(now, room, side, rank, b.Kind, b.Detail)
}

// NoteEnded records an event on a room no rank holds any more, if its
// cleared record is still kept; it opens no record.
func (h *History) NoteEnded(now time.Time, room uint64, side string, rank int, kind, detail string) bool {
	if h == nil {
		return false
	}
	h.recorded[kind]++
	return h.lateNote(room, contract.Event{At: now, Side: side, Rank: rank, Kind: kind, State: contract.StateCleared, Detail: detail})
}

// Clear records that a rank cleared the room; once no rank holds it the
// record moves to the cleared list.
func (h *History) Clear(now time.Time, room uint64, side string, rank int, last KVPoll, why string) {
	if h == nil {
		return
	}
	h.recorded[contract.RoomEventClear]++
	r := h.record(now, room, side)
	r.Events = append(r.Events, contract.Event{At: now, Side: side, Rank: rank, Kind: contract.RoomEventClear, State: last.String(), Detail: why})
	r.LastState = last.String()
	delete(r.Ranks, rank)
	r.Updated = now
	if len(r.Ranks) == 0 {
		h.retire(r)
	}
}

// Forget retires a room that only has notes (never held a status).
func (h *History) Forget(room uint64) {
	if h == nil {
		return
	}
	if r, ok := h.rooms[room]; ok && len(r.Ranks) == 0 {
		if r.LastState == "" {
			r.LastState = r.State
		}
		h.retire(r)
	}
}

func (h *History) retire(r *contract.RoomRecord) {
	r.Cleared = true
	r.State = contract.StateCleared
	delete(h.rooms, r.Room)
	h.cleared = append(h.cleared, r)
	h.byCleared[r.Room] = r
	for len(h.cleared)-h.head > h.Keep {
		old := h.cleared[h.head]
		if h.byCleared[old.Room] == old {
			delete(h.byCleared, old.Room)
		}
		h.cleared[h.head] = nil
		h.head++
	}
	if h.head >= h.Keep {
		n := copy(h.cleared, h.cleared[h.head:])
		clear(h.cleared[n:])
		h.cleared, h.head = h.cleared[:n], 0
	}
}

// kept is the cleared records still kept, oldest first.
func (h *History) kept() []*contract.RoomRecord { return h.cleared[h.head:] }

// Snapshot returns copies of held rooms (oldest first) and recently cleared
// rooms. A record with only notes (an ABORT for a room this side never
// created) is not held by any rank and is left out until it gets a status.
func (h *History) Snapshot() (held, cleared []contract.RoomRecord) {
	held = h.held(true)
	for _, r := range h.kept() {
		cleared = append(cleared, copyRecord(r, true))
	}
	return held, cleared
}

// Held is Snapshot's held rooms without their events, for a caller that
// would throw the events and the cleared copies away (the simulator's
// periodic rooms snapshot).
func (h *History) Held() []contract.RoomRecord { return h.held(false) }

// HeldWithEvents is Snapshot's held rooms alone: what the queue gauges are
// judged against at the instant they are read (contract.QueueRules).
func (h *History) HeldWithEvents() []contract.RoomRecord { return h.held(true) }

func (h *History) held(events bool) (held []contract.RoomRecord) {
	for _, r := range h.rooms {
		if len(r.Ranks) > 0 {
			held = append(held, copyRecord(r, events))
		}
	}
	// Map order must not leak out: rooms created in the same instant (the
	// simulator's clock) are ordered by id, so a replay reads the same.
	slices.SortFunc(held, func(a, b contract.RoomRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Room, b.Room)
	})
	return held
}

// Counts is len of Snapshot's two lists, copying nothing.
func (h *History) Counts() (held, cleared int) {
	for _, r := range h.rooms {
		if len(r.Ranks) > 0 {
			held++
		}
	}
	return held, len(h.kept())
}

func copyRecord(r *contract.RoomRecord, events bool) contract.RoomRecord {
	c := *r
	c.Ranks = make(map[int]string, len(r.Ranks))
	for k, v := range r.Ranks {
		c.Ranks[k] = v
	}
	c.Events = nil
	if events {
		c.Events = append([]contract.Event(nil), r.Events...)
	}
	return c
}
