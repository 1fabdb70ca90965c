package check

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// checkRoomsTerminal: every room reached Success/Failed and was cleared.
func checkRoomsTerminal(v *View) CheckResult {
	seen := map[string]bool{}
	cleared := int64(0)
	for src, snaps := range v.Rooms {
		for _, s := range snaps {
			for _, r := range s.Held {
				seen[fmt.Sprintf("%s/%d", src, r.Room)] = true
			}
		}
	}
	var errs []string
	for src, s := range v.Final {
		if s.Err != "" {
			errs = append(errs, s.Err)
		}
		cleared += int64(s.Cleared)
		for _, r := range s.Held {
			seen[fmt.Sprintf("%s/%d", src, r.Room)] = true
		}
	}
	stuck, total := v.stuckRooms(maxStuck)
	ev := map[string]int64{"rooms_seen_held": int64(len(seen)), "rooms_cleared": cleared, "rooms_held": int64(total),
		"engines": int64(len(v.Final))}
	ev["rooms_checked"] = max(ev["rooms_seen_held"], cleared)
	switch {
	case len(v.Final) == 0:
		return result(contract.CheckRoomsTerminal, Skip, ev, "the target exposes no /debug/rooms")
	case total > 0:
		r := result(contract.CheckRoomsTerminal, Fail, ev, "%d rooms still held after the drain (first: room %d on %s, state %s, stuck since %v)",
			total, stuck[0].Room, stuck[0].Role, stuck[0].State, stuck[0].Since)
		r.Stuck = stuck
		return r
	}
	recs := roomsByRole(v)
	revived := revivedRooms(recs)
	ev["rooms_revived"] = int64(len(revived))
	lingered := lingeringRooms(recs, DefaultRaceWindow)
	ev["rooms_lingering"] = int64(len(lingered))
	unfit := unfittingRooms(v, recs)
	ev["rooms_never_fitting"] = int64(len(unfit))
	switch {
	case len(revived) > 0:
		r := result(contract.CheckRoomsTerminal, Fail, ev, "%d rooms left Failed, or went on after the client's abort, without being cleared first (Failed is final): %s",
			len(revived), joinLimit(revived, 2))
		r.Details = revived
		return r
	case len(lingered) > 0:
		r := result(contract.CheckRoomsTerminal, Fail, ev, "%d rooms went on after an event that ends them at once: %s",
			len(lingered), joinLimit(lingered, 2))
		r.Details = lingered
		return r
	case len(unfit) > 0:
		r := result(contract.CheckRoomsTerminal, Fail, ev, "%d rooms decode took that need more KV pages than its pool holds, so they can only end by a cancel: %s",
			len(unfit), joinLimit(unfit, 2))
		r.Details = unfit
		return r
	case len(errs) > 0:
		r := result(contract.CheckRoomsTerminal, Inconclusive, ev, "final rooms snapshot failed: %s", joinLimit(errs, 3))
		return r
	case ev["rooms_checked"] == 0:
		return result(contract.CheckRoomsTerminal, Inconclusive, ev, "no room was ever seen: nothing to judge")
	}
	return result(contract.CheckRoomsTerminal, Pass, ev, "%d rooms checked, none held", ev["rooms_checked"])
}

// unfittingRooms lists the decode rooms taken into the prealloc queue
// for more pages a rank than decode's pool holds (the run's engine
// config): no release can ever make room for them, so they wait for a
// cancel while their clients see nothing. The fixed engine refuses such a
// request at once, as SGLang refuses a prompt past the context length at
// its tokenizer.
func unfittingRooms(v *View, recs map[string]map[uint64]contract.RoomRecord) []string {
	if v.Run.Engine == nil {
		return nil
	}
	cfg, _, err := v.Run.Engine.Resolve()
	if err != nil || cfg.Pages <= 0 {
		return nil
	}
	var out []string
	for _, id := range sortedRooms(recs[contract.SideDecode]) {
		for _, e := range sortedEvents(recs[contract.SideDecode][id].Events) {
			if e.Kind != contract.RoomEventPagesNeeded {
				continue
			}
			if n, ok := contract.ParsePagesNeeded(e.Detail); ok && n > cfg.Pages {
				out = append(out, fmt.Sprintf("room %d: taken at %s needing %d pages a rank, the pool holds %d", id, e.At.Format("15:04:05.000"), n, cfg.Pages))
				break
			}
		}
	}
	return out
}

// revivedRooms lists the rooms whose status on some rank left Failed for
// another state before that rank cleared the room. SGLang's Failed is
// final: a write that revives a failed room (a transfer worker finishing
// late, a sender merging over it) is how status-resurrection and
// abort-before-status lose an abort, whatever way the room then ends.
// So is a room a rank cleared that comes back in a state only a transfer
// write sets (Transferring, Success), not as a new request (Bootstrapping)
// or a late metadata (WaitingForInput): a late write re-inserted it (status-resurrection's
// mechanism, whatever then sweeps it). On prefill a room also counts as
// revived when, after the client's abort
// was recorded on it, some rank moves on to a state other than Failed: a
// local abort fails every rank at once, so anything else means the abort
// was lost (the upstream race in which a sender's status update overwrites
// the abort's).
func revivedRooms(recs map[string]map[uint64]contract.RoomRecord) []string {
	var out []string
	for _, role := range slices.Sorted(maps.Keys(recs)) {
		for _, id := range sortedRooms(recs[role]) {
			failed := map[int]contract.Event{}
			// held: ranks with a status since their last clear. abort: the
			// client's abort prefill recorded while it held the room; every
			// rank is Failed from that moment (prefill applies a local
			// abort at once, unlike decode, whose next step may find the
			// last chunk already in and the request decoding).
			held := map[int]bool{}
			cleared := map[int]contract.Event{}
			var abort *contract.Event
			for _, e := range sortedEvents(recs[role][id].Events) {
				switch e.Kind {
				case contract.RoomEventClear:
					delete(failed, e.Rank)
					delete(held, e.Rank)
					cleared[e.Rank] = e
					if len(held) == 0 {
						abort = nil
					}
				case EventAbortRequest:
					if role == contract.SidePrefill && abort == nil && held[e.Rank] {
						abort = &e
					}
				case contract.RoomEventStatus:
					held[e.Rank] = true
					if c, ok := cleared[e.Rank]; ok {
						delete(cleared, e.Rank)
						if e.State == contract.StateTransferring || e.State == contract.StateSuccess {
							// A new request opens a room Bootstrapping (or
							// Failed, when its abort came first), a late
							// metadata WaitingForInput; only a transfer write
							// brings one back Transferring or Success.
							out = append(out, fmt.Sprintf("room %d on %s rank %d: cleared at %s (%s), then %s (%s) with no new request", id, role, e.Rank,
								c.At.Format("15:04:05.000"), c.Detail, e.State, e.Detail))
							continue
						}
					}
					if e.State == contract.StateFailed {
						if _, ok := failed[e.Rank]; !ok {
							failed[e.Rank] = e
						}
						continue
					}
					if f, ok := failed[e.Rank]; ok {
						out = append(out, fmt.Sprintf("room %d on %s rank %d: Failed at %s (%s), then %s (%s)", id, role, e.Rank,
							f.At.Format("15:04:05.000"), f.Detail, e.State, e.Detail))
						delete(failed, e.Rank)
					} else if abort != nil {
						out = append(out, fmt.Sprintf("room %d on %s rank %d: the client's abort recorded at %s (%s), then %s (%s)", id, role, e.Rank,
							abort.At.Format("15:04:05.000"), abort.Detail, e.State, e.Detail))
						abort = nil
					}
				}
			}
		}
	}
	return out
}

// lingeringRooms lists the rooms a rank kept live (Bootstrapping,
// WaitingForInput, Transferring) for longer than window after recording
// an event that ends the room at once on the fixed engine
// (contract.Endings: a failed KV write, decode's ABORT): the engine saw
// the failure and did not act on it, so the room ended later by some
// deadline, or not at all. A record that may have lost events
// (contract.MaxRoomEvents) is not judged.
func lingeringRooms(recs map[string]map[uint64]contract.RoomRecord, window time.Duration) []string {
	var out []string
	for _, role := range slices.Sorted(maps.Keys(recs)) {
		for _, id := range sortedRooms(recs[role]) {
			rec := recs[role][id]
			if nonClear(rec.Events) >= contract.MaxRoomEvents {
				continue
			}
			live := map[int]bool{}
			pending := map[int]contract.Event{}
			var last time.Time
			report := func(rank int, e contract.Event, until string) {
				end, _ := contract.EndingOf(role, e.Kind)
				out = append(out, fmt.Sprintf("room %d on %s rank %d: %s at %s (%s), then %s; %s", id, role, rank, e.Kind,
					e.At.Format("15:04:05.000"), e.Detail, until, end.Why))
			}
			for _, e := range sortedEvents(rec.Events) {
				last = e.At
				if p, ok := pending[e.Rank]; ok && e.At.Sub(p.At) > window {
					delete(pending, e.Rank)
					report(e.Rank, p, fmt.Sprintf("still live %v later (%s %s)", e.At.Sub(p.At).Round(time.Millisecond), e.Kind, e.State))
				}
				switch e.Kind {
				case contract.RoomEventStatus:
					live[e.Rank] = !contract.TerminalState(e.State)
					if !live[e.Rank] {
						delete(pending, e.Rank)
					}
				case contract.RoomEventClear:
					live[e.Rank] = false
					delete(pending, e.Rank)
				default:
					if _, ends := contract.EndingOf(role, e.Kind); ends && live[e.Rank] {
						if _, ok := pending[e.Rank]; !ok {
							pending[e.Rank] = e
						}
					}
				}
			}
			for _, rank := range slices.Sorted(maps.Keys(pending)) {
				if p := pending[rank]; rec.Cleared || last.Sub(p.At) > window || !rec.Updated.IsZero() && rec.Updated.Sub(p.At) > window {
					report(rank, p, "no Failed status on that rank in the record")
				}
			}
		}
	}
	return out
}
