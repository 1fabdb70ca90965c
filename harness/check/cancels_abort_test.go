package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// abortView is a run of n cancels by abort_request, each sent at 1 s into
// a request both sides held from 0.5 s; room(i) builds side's record of
// request i, ans(i) its outcome.
func abortView(n int, room func(side string, i int, at func(time.Duration) time.Time) contract.RoomRecord,
	ans func(i int, o *outcome.Outcome)) *View {
	base := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	v := &View{Run: RunInfo{BaseWall: base}, Roles: map[string]string{"p": "prefill", "d": "decode"},
		Ended: map[string]map[uint64]contract.RoomRecord{"p": {}, "d": {}}, Final: map[string]RoomsSnap{}}
	for i := range n {
		o := outcome.Outcome{Kind: outcome.KindCancelled, Reason: outcome.ReasonAbortRequest, Room: uint64(100 + i), HasRoom: true,
			Agent: i, AbortSent: time.Second, End: time.Second + 30*time.Millisecond, AnswerAfterAbort: outcome.AnswerError}
		ans(i, &o)
		v.Outcomes = append(v.Outcomes, o)
		v.Ended["p"][o.Room] = room("prefill", i, at)
		v.Ended["d"][o.Room] = room("decode", i, at)
	}
	return v
}

// held is a record created at 0.5 s that records the client's abort (when
// abort) at 1.02 s and ends Failed at 1.03 s.
func held(side string, abort bool, at func(time.Duration) time.Time) contract.RoomRecord {
	r := contract.RoomRecord{Created: at(500 * time.Millisecond), LastState: contract.StateFailed}
	r.Events = append(r.Events, contract.Event{At: at(500 * time.Millisecond), Kind: contract.RoomEventStatus, State: contract.StateBootstrapping})
	if abort {
		r.Events = append(r.Events, contract.Event{At: at(1020 * time.Millisecond), Kind: EventAbortRequest})
	} else {
		r.Events = append(r.Events, contract.Event{At: at(1020 * time.Millisecond), Kind: EventAbortReceived})
	}
	r.Events = append(r.Events, contract.Event{At: at(1030 * time.Millisecond), Kind: contract.RoomEventClear})
	return r
}

func TestCancelsReachedAbortRequests(t *testing.T) {
	t.Parallel()
	both := func(side string, i int, at func(time.Duration) time.Time) contract.RoomRecord {
		return held(side, true, at)
	}
	asIs := func(int, *outcome.Outcome) {}
	for _, tc := range []struct {
		name string
		v    *View
		want Status
		say  string
	}{
		{"aborted on both sides at once", abortView(6, both, asIs), Pass, ""},
		{"the answer ran on to its end", abortView(1, both, func(_ int, o *outcome.Outcome) {
			o.AnswerAfterAbort, o.End, o.Tokens = outcome.AnswerCompleted, 3*time.Second, 90
		}), Fail, "the engines ignored it: the answer ran to its end (90 tokens) 2s after"},
		{"a whole answer racing the abort", abortView(1, both, func(_ int, o *outcome.Outcome) {
			o.AnswerAfterAbort, o.End = outcome.AnswerCompleted, 1200*time.Millisecond
		}), Pass, ""},
		{"an abort that ended the answer late", abortView(1, both, func(_ int, o *outcome.Outcome) {
			o.End = 7 * time.Second
		}), Fail, "the answer ended only 6s after it (error)"},
		{"prefill never records one", abortView(5, func(side string, i int, at func(time.Duration) time.Time) contract.RoomRecord {
			return held(side, side == "decode", at)
		}, asIs), Fail, "prefill recorded none of 5 abort_requests"},
		{"prefill missed a few races", abortView(6, func(side string, i int, at func(time.Duration) time.Time) contract.RoomRecord {
			return held(side, side == "decode" || i > 3, at)
		}, asIs), Pass, ""},
		{"the abort came before the request", abortView(1, func(side string, i int, at func(time.Duration) time.Time) contract.RoomRecord {
			return contract.RoomRecord{Created: at(1500 * time.Millisecond), LastState: contract.StateSuccess,
				Events: []contract.Event{{At: at(4 * time.Second), Kind: contract.RoomEventClear}}}
		}, func(_ int, o *outcome.Outcome) { o.AnswerAfterAbort, o.End = outcome.AnswerCompleted, 4*time.Second }), Pass, ""},
		{"decode took the request only after the abort", abortView(1, lateOnDecode(1500*time.Millisecond), withRid), Pass, ""},
		{"decode held the request and dropped the abort", abortView(1, lateOnDecode(800*time.Millisecond), withRid), Fail,
			"decode never recorded the client's abort; the room ended 2s after the cancel"},
	} {
		c := checkCancelsReached(tc.v)
		if c.Status != tc.want || !strings.Contains(c.Summary, tc.say) {
			t.Errorf("%s: cancels-reached %s (%s), want %s saying %q", tc.name, c.Status, c.Summary, tc.want, tc.say)
		}
	}
	c := checkCancelsReached(abortView(1, lateOnDecode(1500*time.Millisecond), withRid))
	if c.Evidence["abort_requests_before_one_side_held_it"] != 1 || c.Evidence["sides_checked"] != 1 {
		t.Errorf("a side that took the request after its abort: evidence %v, want it counted apart and only prefill judged", c.Evidence)
	}
}

// withRid names the cancelled request r1, as the records of lateOnDecode do.
func withRid(_ int, o *outcome.Outcome) { o.Rid = "r1" }

// lateOnDecode is prefill holding request r1 from 0.5 s and recording its
// abort, and decode taking r1 only at arrived (after the abort at 1 s when
// it waited on a stopped prefill for the route) and failing it at 3 s with
// no abort recorded: SGLang drops an abort for a rid it does not hold.
func lateOnDecode(arrived time.Duration) func(string, int, func(time.Duration) time.Time) contract.RoomRecord {
	return func(side string, _ int, at func(time.Duration) time.Time) contract.RoomRecord {
		if side == "prefill" {
			r := held(side, true, at)
			r.Events[0].Detail = "sender " + contract.CreatedFor("r1")
			return r
		}
		return contract.RoomRecord{Created: at(arrived), LastState: contract.StateFailed, Events: []contract.Event{
			{At: at(arrived), Kind: contract.RoomEventStatus, State: contract.StateBootstrapping, Detail: "receiver " + contract.CreatedFor("r1")},
			{At: at(3 * time.Second), Kind: contract.RoomEventClear}}}
	}
}

// A client cancels a request and retries it at once under the same room
// (room-retries): where the retry reached a side first, that side refused
// the cancelled request (room in use) and its record is the retry's, which
// the cancel need not end. Where the record is the cancelled request's, an
// unrecorded cancel still fails.
func TestCancelsReachedRoomTakenByRetry(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	record := func(rid string) contract.RoomRecord {
		// Opened at 0.5 s, ended by its bootstrap deadline 2 s later:
		// no abort recorded.
		return contract.RoomRecord{Room: 7, Created: at(500 * time.Millisecond), LastState: contract.StateFailed, Events: []contract.Event{
			{At: at(500 * time.Millisecond), Kind: contract.RoomEventStatus, State: contract.StateBootstrapping, Detail: "sender: sender " + contract.CreatedFor(rid)},
			{At: at(2500 * time.Millisecond), Kind: contract.RoomEventStatus, State: contract.StateFailed, Detail: "bootstrap timeout"},
			{At: at(2500 * time.Millisecond), Kind: contract.RoomEventClear}}}
	}
	for _, tc := range []struct {
		name, opened string
		want         Status
	}{{"the retry's record", "room-7-1", Pass}, {"the cancelled request's record", "room-7-0", Fail}} {
		v := &View{Run: RunInfo{BaseWall: base}, Roles: map[string]string{"p": "prefill"},
			Ended: map[string]map[uint64]contract.RoomRecord{"p": {7: record(tc.opened)}}, Final: map[string]RoomsSnap{}}
		v.Outcomes = []outcome.Outcome{{Kind: outcome.KindCancelled, Reason: outcome.ReasonCancel, Room: 7, HasRoom: true, Rid: "room-7-0",
			Start: 500 * time.Millisecond, End: 510 * time.Millisecond}}
		if c := checkCancelsReached(v); c.Status != tc.want {
			t.Errorf("%s: cancels-reached %s (%s), want %s", tc.name, c.Status, c.Summary, tc.want)
		}
	}
}
