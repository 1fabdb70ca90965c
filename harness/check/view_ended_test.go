package check

import (
	"slices"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// A room a late metadata re-opened after prefill had cleared it ends twice
// on prefill, both records in one final snapshot (as the simulator writes
// them) or in two, in either order: cancels-reached judges the record
// created first, the request the client cancelled, and the room's history
// still holds both. Judged on the re-opened record alone, the cancel did
// not reach prefill, and the checker must say so.
func TestEndedTwiceJudgesTheFirstRecord(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, kind string) contract.Event {
		return contract.Event{At: base.Add(d), Side: "prefill", Kind: kind}
	}
	rec := func(created, updated time.Duration, evs ...contract.Event) contract.RoomRecord {
		return contract.RoomRecord{Room: 7, Side: "prefill", Created: base.Add(created), Updated: base.Add(updated), Cleared: true, LastState: contract.StateFailed, Events: evs}
	}
	// The client's abort reached the first record; the re-opened one
	// ended by decode's ABORT.
	aborted := rec(0, 4*time.Second, at(0, "status"), at(time.Second+10*time.Millisecond, EventAbortRequest), at(4*time.Second, "clear"))
	// The first record had ended before the client left.
	endedBefore := rec(0, time.Second/2, at(0, "status"), at(time.Second/2, "clear"))
	reopened := rec(4*time.Second, 4*time.Second+time.Millisecond, at(4*time.Second, "metadata"), at(4*time.Second, "abort-received"), at(4*time.Second+time.Millisecond, "clear"))
	decode := contract.RoomRecord{Room: 7, Side: "decode", Created: base, Updated: base.Add(time.Second), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{{At: base, Side: "decode", Kind: "status"}, {At: base.Add(time.Second), Side: "decode", Kind: EventAbortRequest}, {At: base.Add(time.Second), Side: "decode", Kind: "clear"}}}
	cancel := outcome.Outcome{Kind: outcome.KindCancelled, Room: 7, HasRoom: true, End: time.Second}
	view := func(snaps ...[]contract.RoomRecord) *View {
		evs := []Event{{Type: EvRun, Run: &RunInfo{Scenario: "t", BaseWall: base}}, {Type: EvOutcome, Outcome: &cancel}}
		for i, ended := range snaps {
			evs = append(evs, Event{Type: EvRooms, Source: "prefill", Rooms: &RoomsSnap{Role: "prefill", Ended: ended, Final: i == len(snaps)-1}})
		}
		evs = append(evs, Event{Type: EvRooms, Source: "decode", Rooms: &RoomsSnap{Role: "decode", Ended: []contract.RoomRecord{decode}, Final: true}})
		return NewView(evs)
	}
	for _, first := range []contract.RoomRecord{aborted, endedBefore} {
		for name, snaps := range map[string][][]contract.RoomRecord{
			"one snapshot":        {{first, reopened}},
			"two snapshots":       {{first}, {reopened}},
			"re-opened one first": {{reopened, first}},
			"first one repeated":  {{first}, {first, reopened}},
		} {
			v := view(snaps...)
			if r := checkCancelsReached(v); r.Status != Pass {
				t.Errorf("%s (first record %s): cancels-reached %s: %s", name, eventKinds(first.Events), r.Status, r.Summary)
			}
			if got := roomsByRole(v)["prefill"][7]; len(got.Events) != len(first.Events)+len(reopened.Events) {
				t.Errorf("%s: the room's history holds %d events (%s), want both records' %d", name, len(got.Events), eventKinds(got.Events), len(first.Events)+len(reopened.Events))
			}
		}
	}
	if r := checkCancelsReached(view([]contract.RoomRecord{reopened})); r.Status != Fail {
		t.Errorf("the re-opened record alone: cancels-reached %s (%s), want fail", r.Status, r.Summary)
	}
}

// A request prefill's dead process refused (the router's leg failed)
// leaves prefill only what decode's messages opened: nothing there to
// cancel, so cancels-reached does not judge that side when a kill of
// prefill overlapped the request. Without the kill, or when the request
// did reach prefill (a status or request event names its rid), a missed
// client abort still fails.
func TestCancelNotJudgedWherePrefillsKillRefusedTheRequest(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ev := func(side string, d time.Duration, kind, detail string) contract.Event {
		return contract.Event{At: base.Add(d), Side: side, Kind: kind, Detail: detail}
	}
	decode := contract.RoomRecord{Room: 9, Side: "decode", Created: base, Updated: base.Add(time.Second), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{ev("decode", 0, "status", "receiver "+contract.CreatedFor("r9")), ev("decode", time.Second, EventAbortRequest, ""), ev("decode", time.Second, "clear", "")}}
	cancel := outcome.Outcome{Kind: outcome.KindCancelled, Room: 9, HasRoom: true, Rid: "r9", Start: 0, End: time.Second}
	kill := Event{Type: EvFault, Fault: &schedule.Record{Window: 1, Fault: faults.KillName("prefill", true), Layer: faults.LayerProcess, Applied: true,
		Start: -time.Second, End: 500 * time.Millisecond}}
	judge := func(prefill contract.RoomRecord, killed bool) CheckResult {
		evs := []Event{{Type: EvRun, Run: &RunInfo{Scenario: "t", BaseWall: base}}, {Type: EvOutcome, Outcome: &cancel},
			{Type: EvRooms, Source: "prefill", Rooms: &RoomsSnap{Role: "prefill", Ended: []contract.RoomRecord{prefill}, Final: true}},
			{Type: EvRooms, Source: "decode", Rooms: &RoomsSnap{Role: "decode", Ended: []contract.RoomRecord{decode}, Final: true}}}
		if killed {
			evs = append(evs, kill)
		}
		return checkCancelsReached(NewView(evs))
	}
	metadataOnly := contract.RoomRecord{Room: 9, Side: "prefill", Created: base.Add(10 * time.Millisecond), Updated: base.Add(3 * time.Second), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{ev("prefill", 10*time.Millisecond, "metadata", ""), ev("prefill", 10*time.Millisecond, "status", "bootstrap: metadata arrived"),
			ev("prefill", 3*time.Second, "clear", "")}}
	if r := judge(metadataOnly, true); r.Status != Pass || r.Evidence["sides_killed_before_the_request"] != 1 {
		t.Errorf("prefill was killed and never took the request: cancels-reached %s (%s), evidence %v; want pass, the side not judged", r.Status, r.Summary, r.Evidence)
	}
	if r := judge(metadataOnly, false); r.Status != Fail {
		t.Errorf("no kill: cancels-reached %s (%s), want fail", r.Status, r.Summary)
	}
	// Prefill refused the request (a duplicate rid) and decode's ABORT,
	// the cancel by the peer's path, then tombstoned the room there: the
	// record is never cleared, only forgotten, and the tombstone is where
	// the room ended on prefill. Reached by the peer within the race
	// window; the same ABORT seconds late is a cancel that did not reach.
	abortAt := func(d time.Duration) contract.RoomRecord {
		return contract.RoomRecord{Room: 9, Side: "prefill", Created: base.Add(d), Updated: base.Add(d), Cleared: true, LastState: contract.StateFailed,
			Events: []contract.Event{ev("prefill", d, contract.RoomEventAbortReceived, "ABORT from decode"),
				ev("prefill", d, contract.RoomEventAbortTombstone, "bootstrap: decode ABORT"), ev("prefill", d, contract.RoomEventAbortAck, "")}}
	}
	if r := judge(abortAt(1100*time.Millisecond), false); r.Status != Pass || r.Evidence["prefill_reached_by_peer_abort_only"] != 1 {
		t.Errorf("decode's ABORT tombstoned the room on prefill as the client left: cancels-reached %s (%s), evidence %v; want pass, reached by the peer", r.Status, r.Summary, r.Evidence)
	}
	if r := judge(abortAt(4*time.Second), false); r.Status != Fail {
		t.Errorf("decode's ABORT reached prefill 3 s after the cancel: cancels-reached %s (%s), want fail", r.Status, r.Summary)
	}
	reached := metadataOnly
	reached.Events = append(slices.Clone(metadataOnly.Events[:2]), ev("prefill", 20*time.Millisecond, contract.RoomEventRequest, "sender "+contract.CreatedFor("r9")), metadataOnly.Events[2])
	if r := judge(reached, true); r.Status != Fail {
		t.Errorf("the request reached prefill after its TransferInfo and the client's abort never did: cancels-reached %s (%s), want fail", r.Status, r.Summary)
	}
}
