package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// An error that reached the client as a broken answer (a reset, a cut
// stream, a body that is no error) fails client-outcomes on pdchaos's own
// router unless a fault on the client's link or on the router overlapped
// it; well-formed errors pass, and an external router's broken answers are
// counted, not judged.
func TestClientOutcomesBrokenAnswers(t *testing.T) {
	t.Parallel()
	s := time.Second
	ok := outcome.Outcome{Kind: outcome.KindCompleted, Agent: 1, Start: 1 * s, End: 2 * s}
	broken := func(f outcome.Failure) outcome.Outcome {
		return outcome.Outcome{Kind: outcome.KindError, Agent: 2, Turn: 3, Room: 7, Start: 4 * s, End: 5 * s, Failure: f, Message: "read stream: unexpected EOF"}
	}
	fault := func(name string, layer faults.Layer, from, to time.Duration) schedule.Record {
		return schedule.Record{Fault: name, Layer: layer, Applied: true, Start: from, End: to}
	}
	own := RunInfo{Target: "bundled", Engine: &contract.EngineConfig{}}
	for _, tc := range []struct {
		name   string
		run    RunInfo
		o      outcome.Outcome
		faults []schedule.Record
		want   Status
		ev     string // evidence key that must be 1
	}{
		{"well-formed http error", own, broken(outcome.FailureHTTP), nil, Pass, ""},
		{"error event", own, broken(outcome.FailureErrorEvent), nil, Pass, ""},
		{"unclassified (older log)", own, broken(""), nil, Pass, ""},
		{"reset, no fault", own, broken(outcome.FailureTransport), nil, Fail, "broken_answers"},
		{"truncated, no fault", own, broken(outcome.FailureTruncated), nil, Fail, "broken_answers"},
		{"bad body, no fault", own, broken(outcome.FailureBadBody), nil, Fail, "broken_answers"},
		{"bad event, no fault", own, broken(outcome.FailureBadEvent), nil, Fail, "broken_answers"},
		{"reset while decode was killed", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("sigkill(decode,restart)", faults.LayerProcess, 3*s, 6*s)}, Fail, "broken_answers"},
		{"reset under a client-router toxic", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("reset_peer(client-router,down 0s)", faults.LayerNetwork, 3*s, 0)}, Pass, "broken_answers_faulted"},
		{"cut while the router was stopped, just after", own, broken(outcome.FailureTruncated),
			[]schedule.Record{fault("sigstop(router)", faults.LayerProcess, 1*s, 3500*time.Millisecond)}, Pass, "broken_answers_faulted"},
		{"router fault long before", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("sigstop(router)", faults.LayerProcess, 0, 2*s)}, Fail, "broken_answers"},
		{"cut under the simulator's client-router latency", own, broken(outcome.FailureTruncated),
			[]schedule.Record{fault("latency@client-router", faults.LayerNetwork, 3*s, 6*s)}, Pass, "broken_answers_faulted"},
		{"external router", RunInfo{Target: "external"}, broken(outcome.FailureTransport), nil, Pass, "broken_answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := &View{Run: tc.run, Outcomes: []outcome.Outcome{ok, tc.o}, Faults: tc.faults}
			r := checkClientOutcomes(v)
			if r.Status != tc.want {
				t.Fatalf("%s (%s), want %s", r.Status, r.Summary, tc.want)
			}
			if tc.ev != "" && r.Evidence[tc.ev] != 1 {
				t.Errorf("evidence %v: want %s = 1", r.Evidence, tc.ev)
			}
			if tc.want == Fail && !strings.Contains(r.Summary, string(tc.o.Failure)) {
				t.Errorf("summary %q does not name the failure %q", r.Summary, tc.o.Failure)
			}
		})
	}
}

// On pdchaos's own engine a request that failed with a server error needs
// a cause: a fault during it, a backstop fired on its room, or an earlier
// request of the client's in the same room. A refusal (4xx), a run with a
// regression on and a target with no room records are not judged.
func TestClientOutcomesUnexplainedErrors(t *testing.T) {
	t.Parallel()
	s := time.Second
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	failed := func(room uint64, start time.Duration, status int) outcome.Outcome {
		return outcome.Outcome{Kind: outcome.KindError, Agent: 2, Turn: 1, Room: room, HasRoom: true, Start: start, End: start + s,
			Status: status, Failure: outcome.FailureHTTP, Message: "decode room: aborted"}
	}
	cancelled := func(room uint64, start time.Duration) outcome.Outcome {
		return outcome.Outcome{Kind: outcome.KindCancelled, Agent: 2, Turn: 1, Room: room, HasRoom: true, Start: start, End: start + s/2,
			Reason: outcome.ReasonCancel}
	}
	record := func(room uint64, es ...contract.Event) contract.RoomRecord {
		es = append([]contract.Event{{At: base.Add(4 * s), Side: contract.SideDecode, Kind: contract.RoomEventStatus,
			State: contract.StateBootstrapping, Detail: "receiver: " + contract.CreatedFor("r")}}, es...)
		return contract.RoomRecord{Room: room, Side: contract.SideDecode, Events: es}
	}
	waiting := contract.LookupBackstop(contract.BackstopWaiting)
	backstop := contract.Event{At: base.Add(6 * s), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateFailed,
		Detail: "receiver: " + waiting.Detail}
	own := &contract.EngineConfig{}
	for _, tc := range []struct {
		name     string
		engine   *contract.EngineConfig
		outcomes []outcome.Outcome
		rec      contract.RoomRecord
		faults   []schedule.Record
		want     Status
	}{
		{"a 500 with nothing to explain it", own, []outcome.Outcome{failed(7, 4*s, 500)}, record(7), nil, Fail},
		{"an error event with nothing to explain it", own, []outcome.Outcome{failed(7, 4*s, 0)}, record(7), nil, Fail},
		{"during a fault", own, []outcome.Outcome{failed(7, 4*s, 500)}, record(7),
			[]schedule.Record{{Fault: "drop(control/0,metadata)", Layer: faults.LayerProtocol, Applied: true, Start: 3 * s, End: 5 * s}}, Pass},
		{"a fault long before", own, []outcome.Outcome{failed(7, 4*s, 500)}, record(7),
			[]schedule.Record{{Fault: "drop(control/0,metadata)", Layer: faults.LayerProtocol, Applied: true, Start: 0, End: s}}, Fail},
		{"its room's backstop fired", own, []outcome.Outcome{failed(7, 4*s, 500)}, record(7, backstop), nil, Pass},
		{"a retry in the room of an earlier request", own, []outcome.Outcome{cancelled(7, 2*s), failed(7, 4*s, 500)}, record(7), nil, Pass},
		{"a refusal", own, []outcome.Outcome{failed(7, 4*s, 400)}, record(7), nil, Pass},
		{"a regression on", &contract.EngineConfig{Regressions: []string{contract.DecodeAbortLeak}}, []outcome.Outcome{failed(7, 4*s, 500)}, record(7), nil, Pass},
		{"no room records", own, []outcome.Outcome{failed(7, 4*s, 500)}, contract.RoomRecord{}, nil, Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var evs []Event
			evs = append(evs, Event{Run: &RunInfo{Target: "bundled", BaseWall: base, Engine: tc.engine}})
			for i := range tc.outcomes {
				evs = append(evs, Event{Outcome: &tc.outcomes[i]})
			}
			v := NewView(evs)
			v.Faults = tc.faults
			if tc.rec.Room != 0 {
				v.Roles["d"] = contract.SideDecode
				v.Ended["d"] = map[uint64]contract.RoomRecord{tc.rec.Room: tc.rec}
			}
			r := checkClientOutcomes(v)
			if r.Status != tc.want {
				t.Fatalf("%s (%s), want %s", r.Status, r.Summary, tc.want)
			}
		})
	}
}

// A retry refused as a duplicate rid fails client-outcomes on the bundled
// engine only when both sides had released the first send's room before
// the retry was sent; a side still holding it, or with no record of it,
// explains the refusal.
func TestClientOutcomesRefusedRetries(t *testing.T) {
	t.Parallel()
	s := time.Second
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	const rid, firstRoom, retryRoom = "r1", 7, 8
	first := outcome.Outcome{Kind: outcome.KindCancelled, Agent: 2, Turn: 1, Room: firstRoom, HasRoom: true, Start: s, End: 2 * s,
		Reason: outcome.ReasonCancel, Rid: rid}
	retry := func(msg string) outcome.Outcome {
		return outcome.Outcome{Kind: outcome.KindError, Agent: 2, Turn: 1, Room: retryRoom, HasRoom: true, Start: 3 * s, End: 3*s + s/10,
			Status: 400, Failure: outcome.FailureHTTP, Message: msg, Rid: rid, Retry: true}
	}
	refused := retry("add request r1: " + contract.DuplicateRidRefusal)
	record := func(side string, cleared time.Duration) contract.RoomRecord {
		es := []contract.Event{{At: base.Add(s), Side: side, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping,
			Detail: contract.CreatedFor(rid)}}
		if cleared > 0 {
			es = append(es, contract.Event{At: base.Add(cleared), Side: side, Kind: contract.RoomEventClear, State: contract.StateFailed})
		}
		return contract.RoomRecord{Room: firstRoom, Side: side, Events: es}
	}
	own := &contract.EngineConfig{}
	for _, tc := range []struct {
		name            string
		engine          *contract.EngineConfig
		retry           outcome.Outcome
		prefill, decode time.Duration // when each side released the first send (0: never)
		want            Status
	}{
		{"both sides released it before the retry", own, refused, 2 * s, 2 * s, Fail},
		{"decode still held it", own, refused, 2 * s, 0, Pass},
		{"prefill released it only after the retry was sent", own, refused, 4 * s, 2 * s, Pass},
		{"another refusal", own, retry("add request r1: prompt too long"), 2 * s, 2 * s, Pass},
		{"a regression on", &contract.EngineConfig{Regressions: []string{contract.DecodeAbortLeak}}, refused, 2 * s, 2 * s, Pass},
		{"an external target", nil, refused, 2 * s, 2 * s, Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs := []Event{{Run: &RunInfo{Target: "bundled", BaseWall: base, Engine: tc.engine}}, {Outcome: &first}, {Outcome: &tc.retry}}
			v := NewView(evs)
			v.Roles["p"], v.Roles["d"] = contract.SidePrefill, contract.SideDecode
			v.Ended["p"] = map[uint64]contract.RoomRecord{firstRoom: record(contract.SidePrefill, tc.prefill)}
			v.Ended["d"] = map[uint64]contract.RoomRecord{firstRoom: record(contract.SideDecode, tc.decode)}
			r := checkClientOutcomes(v)
			if r.Status != tc.want {
				t.Fatalf("%s (%s), want %s", r.Status, r.Summary, tc.want)
			}
			if tc.want == Fail && !strings.Contains(r.Summary, "neither side held") {
				t.Errorf("summary %q does not say why", r.Summary)
			}
		})
	}
}
