package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// DefaultCancelBound is how long after a client cancel each side may take
// to record it: well under the engine's backstop deadlines (10s by
// default), so a room that ends only by a deadline has not been reached.
const DefaultCancelBound = 5 * time.Second

// EventAbortRequest is the room event an engine records when a client's
// abort of the request reaches it (SGLang's abort_request), on prefill as
// on decode. An ABORT from the peer is another event: it is how a cancel
// that never reached prefill would still fail prefill's room.
const EventAbortRequest = contract.RoomEventAbortRequest

// EventAbortReceived is the room event prefill records when decode's
// ABORT for the room arrives.
const EventAbortReceived = contract.RoomEventAbortReceived

// MinCancelsForRouterRule is how many cancels must have reached prefill
// before "every one came only by decode's ABORT" says the router does not
// cancel prefill (each alone is a race either path can win).
const MinCancelsForRouterRule = 5

// checkCancelsReached: every client cancel whose room the client knows
// reached both prefill and decode: on each side the room recorded the
// client's abort within DefaultCancelBound (any time, if a fault window
// overlapped that bound), or it had already ended there when the client
// cancelled, or it completed (Success) within the bound, racing the cancel,
// or it ended by the peer's ABORT, or on its own, within DefaultRaceWindow
// of the cancel. The peer's ABORT is the cancel arriving by the other path: the router
// cancels both sides at once, decode's ABORT got to prefill first, prefill
// answered the router's request, and the router then had nothing left to
// cancel. Ending Failed later, by a deadline, or by an ABORT long after is a
// cancel that did not reach that side. A room a side never recorded is
// counted as unseen, not judged. A room a side tombstoned (it held no
// request there) ended at the tombstone.
//
// A cancel by abort_request (the client POSTs it to every engine and reads
// on) is judged from when it was sent, and its answer too: it must end
// soon (abortAnswered). One sent before the engines held the request is
// counted, not judged: SGLang drops an abort for a rid it does not hold.
//
// Each abort_request also goes to prefill itself, so where at least
// MinCancelsForRouterRule of them found the request held on prefill and
// prefill recorded none (decode's ABORT, or the KV sent, ended the rooms
// anyway), prefill's endpoint does not abort, and the check fails.
//
// Judged one by one, a router that never cancels prefill's request is
// hidden by decode's ABORT. Over the run it is not: where at least
// MinCancelsForRouterRule cancels reached prefill and every one came only
// by decode's ABORT, none by the router's own cancel, the check fails.
func checkCancelsReached(v *View) CheckResult {
	recs := map[string]map[uint64]contract.RoomRecord{}
	for src, ended := range v.Ended {
		role := v.Roles[src]
		if recs[role] == nil {
			recs[role] = map[uint64]contract.RoomRecord{}
		}
		for id, r := range ended {
			keepFirst(recs[role], id, r)
		}
	}
	for _, src := range sortedSources(v.Final) {
		snap := v.Final[src]
		if recs[snap.Role] == nil {
			recs[snap.Role] = map[uint64]contract.RoomRecord{}
		}
		for _, r := range snap.Held {
			keepFirst(recs[snap.Role], r.Room, r)
		}
	}
	ev := map[string]int64{"cancels_with_room": 0, "sides_checked": 0, "sides_unseen": 0, "late_excused_by_fault": 0,
		"prefill_reached_by_client_abort": 0, "prefill_reached_by_peer_abort_only": 0,
		"abort_requests": 0, "abort_requests_before_the_request": 0,
		"abort_requests_prefill_recorded": 0, "abort_requests_prefill_unrecorded": 0}
	switch {
	case len(v.Final) == 0 && len(v.Ended) == 0:
		return result(contract.CheckCancelsReached, Skip, ev, "the target exposes no /debug/rooms")
	case len(v.Ended) == 0:
		return result(contract.CheckCancelsReached, Skip, ev, "the log keeps no ended rooms (recorded before they were logged)")
	case v.Run.BaseWall.IsZero():
		return result(contract.CheckCancelsReached, Inconclusive, ev, "the log has no base wall time to place room events")
	}
	var bad []string
	var stuck, peerOnly, abortUnrecorded []StuckRoom
	for _, o := range v.Outcomes {
		if o.Kind != outcome.KindCancelled || !o.HasRoom {
			continue
		}
		ev["cancels_with_room"]++
		tc := o.CancelledAt()
		excused := v.faultDuring(tc, tc+DefaultCancelBound)
		if o.Reason == outcome.ReasonAbortRequest {
			ev["abort_requests"]++
			if abortCameFirst(recs, o.Room, tc, v.Run.BaseWall) {
				// SGLang drops an abort for a rid it does not hold yet: the
				// request then runs as if never cancelled. Counted.
				ev["abort_requests_before_the_request"]++
				continue
			}
			if why := abortAnswered(o, excused); why != "" {
				bad = append(bad, fmt.Sprintf("room %d (agent %d turn %d, abort_request at %v): %s", o.Room, o.Agent, o.Turn, tc.Round(time.Millisecond), why))
			}
		}
		for _, role := range []string{"prefill", "decode"} {
			r, ok := recs[role][o.Room]
			if !ok {
				ev["sides_unseen"]++
				continue
			}
			if rid, named := openedFor(r); named && o.Rid != "" && rid != o.Rid {
				// A retry under the same room overtook the cancelled
				// request here, which this side then refused (room in
				// use): there was nothing of it to cancel.
				ev["sides_held_another_request"]++
				continue
			}
			if _, named := openedFor(r); !named && v.roleKilledDuring(role, o.Start, tc+DefaultCancelBound) {
				// The side's process was killed between the request's
				// start and the cancel's bound, and the record read from
				// it holds no request of this room (the peer's messages
				// alone opened it): the request was refused by the dead
				// process, or died with it before the cancel was due.
				// There is nothing left here to judge.
				ev["sides_killed_before_the_request"]++
				continue
			}
			if at, ok := requestArrived(r, o.Rid); o.Reason == outcome.ReasonAbortRequest && ok && at.Sub(v.Run.BaseWall) > tc {
				// This side took the request only after the client's
				// abort_request had reached it (decode waited on a stopped
				// prefill for the route, say): SGLang drops an abort for a
				// rid it does not hold, so here the request runs as if
				// never cancelled. Counted, not judged, as abortCameFirst
				// is for both sides.
				ev["abort_requests_before_one_side_held_it"]++
				continue
			}
			ev["sides_checked"]++
			why, how, late := cancelReached(role, r, tc, excused, v.Run.BaseWall)
			if late {
				ev["late_excused_by_fault"]++
			}
			if role == "prefill" && o.Reason == outcome.ReasonAbortRequest && heldAt(r, tc, v.Run.BaseWall) {
				if recordedClientAbort(r) {
					ev["abort_requests_prefill_recorded"]++
				} else {
					ev["abort_requests_prefill_unrecorded"]++
					if len(abortUnrecorded) < maxStuck {
						abortUnrecorded = append(abortUnrecorded, StuckRoom{Role: role, Room: r.Room, State: r.State, Ranks: r.Ranks, Since: tc,
							ActiveFaults: v.activeAt(tc), Events: r.Events})
					}
				}
			}
			if role == "prefill" {
				switch how {
				case reachedByClient:
					ev["prefill_reached_by_client_abort"]++
				case reachedByPeer:
					ev["prefill_reached_by_peer_abort_only"]++
					if len(peerOnly) < maxStuck {
						peerOnly = append(peerOnly, StuckRoom{Role: role, Room: r.Room, State: r.State, Ranks: r.Ranks, Since: tc,
							ActiveFaults: v.activeAt(tc), Events: r.Events})
					}
				}
			}
			if how != notReached {
				continue
			}
			bad = append(bad, fmt.Sprintf("room %d (agent %d turn %d, %s cancel at %v): %s %s",
				o.Room, o.Agent, o.Turn, o.Reason, tc.Round(time.Millisecond), role, why))
			if len(stuck) < maxStuck {
				stuck = append(stuck, StuckRoom{Role: role, Room: r.Room, State: r.State, Ranks: r.Ranks, Since: tc,
					ActiveFaults: v.activeAt(tc), Events: r.Events})
			}
		}
	}
	if byPeer := ev["prefill_reached_by_peer_abort_only"]; byPeer >= MinCancelsForRouterRule && ev["prefill_reached_by_client_abort"] == 0 {
		ex := peerOnly[0]
		bad = append(bad, fmt.Sprintf("none of %d cancels reached prefill from the router: prefill never recorded the client's abort, every room ended only by decode's ABORT (the router does not cancel prefill's request when its client leaves); e.g. room %d: %s",
			byPeer, ex.Room, eventKinds(ex.Events)))
		stuck = append(stuck, peerOnly[:min(len(peerOnly), max(0, maxStuck-len(stuck)))]...)
	}
	if n := ev["abort_requests_prefill_unrecorded"]; n >= MinCancelsForRouterRule && ev["abort_requests_prefill_recorded"] == 0 {
		ex := abortUnrecorded[0]
		bad = append(bad, fmt.Sprintf("prefill recorded none of %d abort_requests sent to it for requests it held (its /abort_request does not abort; the rooms ended some other way); e.g. room %d: %s",
			n, ex.Room, eventKinds(ex.Events)))
		stuck = append(stuck, abortUnrecorded[:min(len(abortUnrecorded), max(0, maxStuck-len(stuck)))]...)
	}
	switch {
	case len(bad) > 0:
		r := result(contract.CheckCancelsReached, Fail, ev, "%d cancels did not reach a side: %s", len(bad), joinLimit(bad, 3))
		r.Details, r.Stuck = bad, stuck
		return r
	case ev["cancels_with_room"] == 0:
		return result(contract.CheckCancelsReached, Skip, ev, "no client cancel carried its room")
	}
	return result(contract.CheckCancelsReached, Pass, ev, "%d cancels reached both sides (%d sides checked, %d unseen)",
		ev["cancels_with_room"], ev["sides_checked"], ev["sides_unseen"])
}

// heldAt says whether the side held the room at offset tc: created by
// then, not yet cleared.
func heldAt(r contract.RoomRecord, tc time.Duration, base time.Time) bool {
	if r.Created.IsZero() || r.Created.Sub(base) > tc {
		return false
	}
	for _, e := range r.Events {
		if e.Kind == contract.RoomEventClear && e.At.Sub(base) <= tc {
			return false
		}
	}
	return true
}

// recordedClientAbort says whether the side recorded the client's abort.
func recordedClientAbort(r contract.RoomRecord) bool {
	for _, e := range r.Events {
		if e.Kind == EventAbortRequest {
			return true
		}
	}
	return false
}

// abortCameFirst says whether a client's abort_request at offset tc came
// before the engines held its request: every recorded side created the
// room after it.
func abortCameFirst(recs map[string]map[uint64]contract.RoomRecord, room uint64, tc time.Duration, base time.Time) bool {
	seen := false
	for _, role := range []string{"prefill", "decode"} {
		r, ok := recs[role][room]
		if !ok || r.Created.IsZero() {
			continue
		}
		seen = true
		if r.Created.Sub(base) <= tc {
			return false
		}
	}
	return seen
}

// abortAnswered judges the answer a client read on after its
// abort_request: it must end within DefaultCancelBound (any time, if a
// fault was active), by the engine's abort or, when the cancel raced the
// last token, as a whole answer within DefaultRaceWindow. A whole answer
// later is an abort the engines ignored.
func abortAnswered(o outcome.Outcome, excused bool) string {
	took := o.End - o.AbortSent
	switch {
	case o.AnswerAfterAbort == outcome.AnswerCompleted && took > DefaultRaceWindow && !excused:
		return fmt.Sprintf("the engines ignored it: the answer ran to its end (%d tokens) %v after", o.Tokens, took.Round(time.Millisecond))
	case took > DefaultCancelBound && !excused:
		return fmt.Sprintf("the answer ended only %v after it (%s)", took.Round(time.Millisecond), o.AnswerAfterAbort)
	}
	return ""
}

// openedFor is the rid of the request the record's room was opened for, or
// that reached it after a TransferInfo had opened it: from its first status
// or request event that names one. False: no request of the room reached
// this side.
func openedFor(r contract.RoomRecord) (string, bool) {
	for _, e := range r.Events {
		if e.Kind != contract.RoomEventStatus && e.Kind != contract.RoomEventRequest {
			continue
		}
		if rid, ok := contract.CreatedRid(e.Detail); ok {
			return rid, true
		}
	}
	return "", false
}

// requestArrived is when the request rid (any request, rid "") reached
// this side's record of its room: the first status or request event that
// names it. False: none did.
func requestArrived(r contract.RoomRecord, rid string) (time.Time, bool) {
	for _, e := range r.Events {
		if e.Kind != contract.RoomEventStatus && e.Kind != contract.RoomEventRequest {
			continue
		}
		if got, ok := contract.CreatedRid(e.Detail); ok && (rid == "" || got == rid) {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// keepFirst keeps, of two records of one room on one side, the one created
// first: a late metadata or ABORT can re-open a room the side had already
// cleared, and that second record (no client abort, created after the
// cancel) is not the request the client cancelled.
func keepFirst(m map[uint64]contract.RoomRecord, id uint64, r contract.RoomRecord) {
	if prev, ok := m[id]; ok && !prev.Created.IsZero() && (r.Created.IsZero() || !r.Created.Before(prev.Created)) {
		return
	}
	m[id] = r
}

// How a cancel reached one side's room.
const (
	notReached      = iota
	reachedByClient // the side recorded the client's abort (or had nothing left to cancel)
	reachedByPeer   // only the peer's ABORT ended it, within DefaultRaceWindow
	reachedByRace   // it ended on its own within DefaultRaceWindow: the cancel found it ending
)

// cancelReached judges role's record of a room the client cancelled at
// offset tc: reached when it recorded the client's abort in time (at any
// time when excused by a fault; late says that excuse was used), or when it
// had ended before the cancel or completed soon enough; reached by the
// peer when the peer's ABORT ended it within DefaultRaceWindow. Prefill
// completes a room when its KV is sent, which may finish while the
// router's cancel is on its way: within DefaultCancelBound. Decode
// completes a room when it has generated the whole answer, so completing
// more than DefaultRaceWindow after the client left is decode generating
// for nobody: its client's abort never reached it.
func cancelReached(role string, r contract.RoomRecord, tc time.Duration, excused bool, base time.Time) (why string, how int, late bool) {
	var ended, peerAbort time.Duration = -1, -1
	for _, e := range r.Events {
		at := e.At.Sub(base)
		switch e.Kind {
		case EventAbortRequest:
			if at <= tc+DefaultCancelBound {
				return "", reachedByClient, false
			}
			if excused {
				return "", reachedByClient, true
			}
			return fmt.Sprintf("recorded the client's abort only %v after it", (at - tc).Round(time.Millisecond)), notReached, false
		case EventAbortReceived:
			if peerAbort < 0 && at >= tc {
				peerAbort = at
			}
		case "clear":
			ended = at
		case contract.RoomEventAbortTombstone:
			// The side remembers the room as aborted: it held no request
			// there (a Failed write for an absent room, or decode's ABORT
			// for a room no request owned), and any later one is refused.
			// The record may never be cleared, only forgotten.
			if ended < 0 {
				ended = at
			}
		}
	}
	completeBound := DefaultCancelBound
	if role == contract.SideDecode {
		completeBound = DefaultRaceWindow
	}
	switch {
	case ended >= 0 && ended <= tc:
		return "", reachedByClient, false // it had ended before the client left
	case ended >= 0 && ended <= tc+completeBound && r.LastState == contract.StateSuccess:
		return "", reachedByClient, false // it completed as the client left: nothing was left to cancel
	case ended >= 0 && r.LastState == contract.StateSuccess && excused:
		return "", reachedByClient, true // a fault may have held the cancel back
	case ended >= 0 && peerAbort >= 0 && ended <= tc+DefaultRaceWindow:
		return "", reachedByPeer, false // the peer's ABORT won the race with the router's cancel
	case ended >= 0 && peerAbort >= 0 && excused && ended <= tc+DefaultCancelBound:
		// A fault held the router's cancel back, and the peer's ABORT
		// ended the room meanwhile: at the pace of the side's queues (a
		// prefill request failed in its waiting queue ends at its batch).
		return "", reachedByPeer, true
	case ended >= 0 && excused && ended <= tc+DefaultCancelBound && r.LastState != contract.StateSuccess:
		// A fault held back the router's cancel and the peer's ABORT
		// both, and the side's own deadline or sweep ended the room
		// within the bound (a TransferInfo whose request never came).
		return "", reachedByRace, true
	case ended >= 0 && ended <= tc+DefaultRaceWindow:
		// Failed on its own (a failure notice, a lost peer) as the client
		// left: the side answered before the cancel came, so it had
		// nothing to cancel. A cancel left to a backstop ends seconds later.
		return "", reachedByRace, false
	}
	if ended >= 0 && r.LastState == contract.StateSuccess && role == contract.SideDecode {
		return fmt.Sprintf("never recorded the client's abort and generated the answer to its end %v after the client left: %s",
			(ended - tc).Round(time.Millisecond), eventKinds(r.Events)), notReached, false
	}
	if ended >= 0 {
		return fmt.Sprintf("never recorded the client's abort; the room ended %v after the cancel (last state %s): %s",
			(ended - tc).Round(time.Millisecond), r.LastState, eventKinds(r.Events)), notReached, false
	}
	return fmt.Sprintf("never recorded the client's abort; the room is still %s: %s", r.State, eventKinds(r.Events)), notReached, false
}

// eventKinds lists a history's event kinds in order, for one line.
func eventKinds(es []contract.Event) string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return joinLimit(out, 12)
}

// faultDuring reports whether any applied fault window overlaps [from, to].
func (v *View) faultDuring(from, to time.Duration) bool {
	for _, f := range v.Faults {
		if f.Applied && f.Start <= to && (f.End == 0 || f.End >= from) {
			return true
		}
	}
	return false
}

// roleKilledDuring reports whether a sigkill of role was applied in a
// window that overlaps [from, to] (a window still open at the end counts).
func (v *View) roleKilledDuring(role string, from, to time.Duration) bool {
	for _, f := range v.Faults {
		if f.Applied && killOf(f, role) &&
			f.Start <= to && (f.End == 0 || f.End >= from) {
			return true
		}
	}
	return false
}

// sortedSources lists a map's keys in order.
func sortedSources[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
