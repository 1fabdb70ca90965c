package check

import (
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// A room a late metadata re-opened after the client's cancel had cleared
// it ends twice on prefill, both records in one final snapshot (as the
// simulator writes them) or in two: the client's abort, recorded in the
// first, still reaches cancels-reached. Without the first record the
// cancel did not reach prefill, and the checker must say so.
func TestEndedTwiceKeepsTheFirstHistory(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, kind string) contract.Event {
		return contract.Event{At: base.Add(d), Side: "prefill", Kind: kind}
	}
	orig := contract.RoomRecord{Room: 7, Side: "prefill", Created: base, Updated: base.Add(4 * time.Second), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{at(0, "status"), at(time.Second+10*time.Millisecond, EventAbortRequest), at(4*time.Second, "clear")}}
	reopened := contract.RoomRecord{Room: 7, Side: "prefill", Created: base.Add(4 * time.Second), Updated: base.Add(4*time.Second + time.Millisecond), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{at(4*time.Second, "status"), at(4*time.Second, "abort-received"), at(4*time.Second+time.Millisecond, "clear")}}
	decode := contract.RoomRecord{Room: 7, Side: "decode", Created: base, Updated: base.Add(time.Second), Cleared: true, LastState: contract.StateFailed,
		Events: []contract.Event{{At: base, Side: "decode", Kind: "status"}, {At: base.Add(time.Second), Side: "decode", Kind: EventAbortRequest}, {At: base.Add(time.Second), Side: "decode", Kind: "clear"}}}
	cancel := outcome.Outcome{Kind: outcome.KindCancelled, Room: 7, HasRoom: true, End: time.Second}
	judge := func(snaps ...[]contract.RoomRecord) CheckResult {
		evs := []Event{{Type: EvRun, Run: &RunInfo{Scenario: "t", BaseWall: base}}, {Type: EvOutcome, Outcome: &cancel}}
		for i, ended := range snaps {
			evs = append(evs, Event{Type: EvRooms, Source: "prefill", Rooms: &RoomsSnap{Role: "prefill", Ended: ended, Final: i == len(snaps)-1}})
		}
		evs = append(evs, Event{Type: EvRooms, Source: "decode", Rooms: &RoomsSnap{Role: "decode", Ended: []contract.RoomRecord{decode}, Final: true}})
		return checkCancelsReached(NewView(evs))
	}
	for name, snaps := range map[string][][]contract.RoomRecord{
		"one snapshot":        {{orig, reopened}},
		"two snapshots":       {{orig}, {reopened}},
		"re-opened one first": {{reopened, orig}},
	} {
		if r := judge(snaps...); r.Status != Pass {
			t.Errorf("%s: cancels-reached %s: %s", name, r.Status, r.Summary)
		}
	}
	if r := judge([]contract.RoomRecord{reopened}); r.Status != Fail {
		t.Errorf("the re-opened record alone: cancels-reached %s (%s), want fail", r.Status, r.Summary)
	}
}
