package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// roomsByRole merges every recorded room by role and room: ended rooms
// (re-opened ones too), final held ones and rooms an engine cleared while its peer held them,
// each event once.
func roomsByRole(v *View) map[string]map[uint64]contract.RoomRecord {
	out := map[string]map[uint64]contract.RoomRecord{}
	add := func(role string, r contract.RoomRecord) {
		if out[role] == nil {
			out[role] = map[uint64]contract.RoomRecord{}
		}
		old, ok := out[role][r.Room]
		if !ok {
			out[role][r.Room] = r
			return
		}
		out[role][r.Room] = mergeRecords(old, r)
	}
	for _, src := range sortedSources(v.Ended) {
		for _, id := range sortedRooms(v.Ended[src]) {
			add(v.Roles[src], v.Ended[src][id])
		}
		for _, r := range v.Reopened[src] {
			add(v.Roles[src], r)
		}
	}
	for _, src := range sortedSources(v.Final) {
		s := v.Final[src]
		for _, r := range s.Held {
			add(s.Role, r)
		}
		for _, r := range s.PeerCleared {
			add(s.Role, r)
		}
	}
	return out
}

// mergeRecords joins two records of one room on one side: the later
// update's state, the earlier creation, every event once.
func mergeRecords(a, b contract.RoomRecord) contract.RoomRecord {
	if b.Updated.Before(a.Updated) {
		a, b = b, a
	}
	out := b
	if !a.Created.IsZero() && (out.Created.IsZero() || a.Created.Before(out.Created)) {
		out.Created = a.Created
	}
	seen := map[contract.Event]bool{}
	out.Events = nil
	for _, e := range append(append([]contract.Event(nil), a.Events...), b.Events...) {
		if !seen[e] {
			seen[e] = true
			out.Events = append(out.Events, e)
		}
	}
	out.Events = sortedEvents(out.Events)
	return out
}

// peerOf is the other side of a PD pair.
func peerOf(role string) string {
	if role == contract.SidePrefill {
		return contract.SideDecode
	}
	return contract.SidePrefill
}

// pollOrder ranks room states as SGLang's KVPoll values do; an unknown
// state reads as Failed.
func pollOrder(s string) int {
	switch s {
	case contract.StateBootstrapping:
		return 1
	case contract.StateWaitingForInput:
		return 2
	case contract.StateTransferring:
		return 3
	case contract.StateSuccess:
		return 4
	}
	return 0
}

// mergeMin is the ranks' states merged with MIN, as SGLang's all-reduce
// over TP ranks does (an unknown state reads as Failed).
func mergeMin(ranks map[int]string) string {
	out, lo := "", 5
	for _, s := range ranks {
		if o := pollOrder(s); o < lo {
			out, lo = s, o
		}
	}
	if lo == 0 {
		return contract.StateFailed
	}
	return out
}

// sortedEvents orders events by time, keeping the order of equal ones.
// Events already in order (as an engine records them) come back as they
// are, not copied: every caller only reads them.
func sortedEvents(es []contract.Event) []contract.Event {
	if slices.IsSortedFunc(es, func(a, b contract.Event) int { return a.At.Compare(b.At) }) {
		return es
	}
	out := append([]contract.Event(nil), es...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// sortedRooms lists a room map's keys in order.
func sortedRooms(m map[uint64]contract.RoomRecord) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// createsRequest reports whether e is a side creating a request in the
// room (its status written for a new rid, or the request event): where a
// new life of a reused room begins.
func createsRequest(e contract.Event) bool {
	_, created := contract.CreatedRid(e.Detail)
	return created && (e.Kind == contract.RoomEventStatus || e.Kind == contract.RoomEventRequest)
}

// nonClear counts the events a record's cap applies to (clears are kept
// beyond it).
func nonClear(es []contract.Event) int {
	n := 0
	for _, e := range es {
		if e.Kind != contract.RoomEventClear {
			n++
		}
	}
	return n
}

// historyLine is a room's history on one line: each event's offset, kind,
// state and rank, in time order.
func historyLine(es []contract.Event, base time.Time) string {
	const most = 24
	var b strings.Builder
	for i, e := range sortedEvents(es) {
		if i == most {
			fmt.Fprintf(&b, ", … %d more", len(es)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v %s %s r%d", e.At.Sub(base).Round(time.Millisecond), e.Kind, e.State, e.Rank)
	}
	return b.String()
}
