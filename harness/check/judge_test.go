package check

import (
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// TestCheckersOnRecordedLogs judges recorded logs offline: good.jsonl passes
// every checker; each bad-<check>[-<how>].jsonl must make exactly that
// checker fail (faults-verified and load-floor: inconclusive, as DESIGN.md
// wants for an unverified fault or too little load) and leave the others
// passing; incon-* make one checker inconclusive. old-*.jsonl are logs
// written before ranks, ended rooms and the engine config were recorded:
// judged as before, with cancels-reached and timeouts-explained skipped.
func TestCheckersOnRecordedLogs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		check string
		want  Status
		skip  []string // checks that skip on this log
	}{
		{"good.jsonl", "", Pass, nil},
		{"bad-rooms-terminal.jsonl", contract.CheckRoomsTerminal, Fail, nil},
		{"bad-slots-released.jsonl", contract.CheckSlotsReleased, Fail, nil},
		{"bad-slots-released-rank-below.jsonl", contract.CheckSlotsReleased, Fail, nil},
		{"bad-slots-released-rank-sum-zero.jsonl", contract.CheckSlotsReleased, Fail, nil},
		{"bad-slots-released-pages-owned-twice.jsonl", contract.CheckSlotsReleased, Fail, nil},
		{"incon-slots-released-missing-family.jsonl", contract.CheckSlotsReleased, Inconclusive, nil},
		{"incon-slots-released-negative.jsonl", contract.CheckSlotsReleased, Inconclusive, nil},
		{"bad-liveness.jsonl", contract.CheckLiveness, Fail, nil},
		{"bad-client-outcomes.jsonl", contract.CheckClientOutcomes, Fail, nil},
		{"bad-cancels-reached.jsonl", contract.CheckCancelsReached, Fail, nil},
		{"bad-cancels-reached-deadline.jsonl", contract.CheckCancelsReached, Fail, nil},
		{"bad-integrity.jsonl", contract.CheckIntegrity, Fail, nil},
		{"bad-no-leaks.jsonl", contract.CheckNoLeaks, Fail, nil},
		{"bad-unreachable-branches.jsonl", contract.CheckUnreachableBranches, Fail, nil},
		{"bad-branches-recorded.jsonl", contract.CheckBranchesRecorded, Fail, nil},
		{"bad-faults-verified.jsonl", contract.CheckFaultsVerified, Inconclusive, nil},
		{"bad-load-floor.jsonl", contract.CheckLoadFloor, Inconclusive, nil},
		{"good-timeouts-explained.jsonl", "", Pass, nil},
		{"bad-timeouts-explained-no-peer.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"bad-timeouts-explained-peer-cleared.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"bad-timeouts-explained-notice-lost.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"bad-timeouts-explained-state-bound.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"bad-timeouts-explained-notice-ignored.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"bad-timeouts-explained-peer-forgot.jsonl", contract.CheckTimeoutsExplained, Fail, nil},
		{"old-good.jsonl", "", Pass, []string{contract.CheckCancelsReached, contract.CheckTimeoutsExplained, contract.CheckUnreachableBranches, contract.CheckBranchesRecorded}},
		{"old-bad-slots-released.jsonl", contract.CheckSlotsReleased, Fail, []string{contract.CheckCancelsReached, contract.CheckTimeoutsExplained, contract.CheckUnreachableBranches, contract.CheckBranchesRecorded}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			evs := readLog(t, tc.file)
			checks := Judge(evs, Floor{})
			if checks.Verdict() != tc.want {
				t.Fatalf("verdict %s, want %s: %+v", checks.Verdict(), tc.want, checks)
			}
			for _, c := range checks {
				want := Pass
				if c.Name == tc.check {
					want = tc.want
				} else if slices.Contains(tc.skip, c.Name) {
					want = Skip
				}
				if c.Status != want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Summary, want)
				}
				if c.Status == Pass && len(c.Evidence) == 0 {
					t.Errorf("%s passed with no evidence", c.Name)
				}
			}
			if tc.want == Fail && checks.Error() == "" {
				t.Fatal("Checks.Error is empty on a failing log")
			}
			if tc.want == Fail && checks.Failed()[0] != tc.check {
				t.Fatalf("first failure %v, want %s", checks.Failed(), tc.check)
			}
		})
	}
}

// TestFailuresNameWhere: each new failure names what a person needs to find
// it: the rank, the family and URL, the room and the side.
func TestFailuresNameWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, check string
		want        []string
	}{
		{"bad-slots-released-rank-below.jsonl", contract.CheckSlotsReleased,
			[]string{"sglang:token_usage{tp_rank=1}=-0.02", "30002", "baseline 0"}},
		{"bad-slots-released-rank-sum-zero.jsonl", contract.CheckSlotsReleased,
			[]string{"sglang:token_usage{tp_rank=0}=0.02", "sglang:num_running_reqs{tp_rank=1}=-1"}},
		{"bad-slots-released-pages-owned-twice.jsonl", contract.CheckSlotsReleased,
			[]string{"{tp_rank=1}: 2 owned twice", "12 in use + 90 free of 100"}},
		{"incon-slots-released-missing-family.jsonl", contract.CheckSlotsReleased,
			[]string{"sglang:num_decode_transfer_queue_reqs absent on http://127.0.0.1:30002/metrics"}},
		{"bad-unreachable-branches.jsonl", contract.CheckUnreachableBranches,
			[]string{"prefill/orphan-status-swept hit 3 times (never on the fixed engine)",
				"prefill/no-transfer-info hit 1 times (a branch of regression unknown-room-waiting, which is off)", "engine/core/prefill_step.go:"}},
		{"bad-branches-recorded.jsonl", contract.CheckBranchesRecorded,
			[]string{"decode wrote 1 \"stray-chunk\" events for 3 probe hits", "prefill wrote 4 \"fail-notice\" events for 3 probe hits",
				"decode/chunk-unknown-room 2, decode/chunk-wrong-stage 1", "http://127.0.0.1:30002"}},
		{"bad-cancels-reached.jsonl", contract.CheckCancelsReached,
			[]string{"room 1001", "prefill never recorded the client's abort", "abort-received"}},
		{"bad-cancels-reached-deadline.jsonl", contract.CheckCancelsReached,
			[]string{"room 1001", "ended 10s after the cancel"}},
		{"bad-timeouts-explained-no-peer.jsonl", contract.CheckTimeoutsExplained,
			[]string{"room 2101: waiting-timeout on decode fired at 5.21s", "prefill has no record of the room", "3.2s metadata-sent WaitingForInput r0"}},
		{"bad-timeouts-explained-peer-cleared.jsonl", contract.CheckTimeoutsExplained,
			[]string{"room 2102: waiting-timeout", "prefill's transfer of the room had completed (Success on every rank, each write and the completion after them acknowledged by decode) 1.81s before",
				"prefill history: 3.2s status Bootstrapping r0, 3.2s status Bootstrapping r1", "3.4s clear Success r1"}},
		{"bad-timeouts-explained-notice-lost.jsonl", contract.CheckTimeoutsExplained,
			[]string{"room 2103: bootstrap-timeout on prefill", "decode recorded metadata-sent 1.9s before it"}},
		{"bad-timeouts-explained-state-bound.jsonl", contract.CheckTimeoutsExplained,
			[]string{"room 2104 on prefill rank 0: Transferring for 4.8s from 3.2s, past its 2s deadline", "rank 1"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			c, _ := Judge(readLog(t, tc.file), Floor{}).Get(tc.check)
			all := c.Summary + "\n" + strings.Join(c.Details, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("%s: %q not in %s", tc.check, w, all)
				}
			}
		})
	}
	c, _ := Judge(readLog(t, "bad-cancels-reached.jsonl"), Floor{}).Get(contract.CheckCancelsReached)
	if len(c.Stuck) == 0 || c.Stuck[0].Role != "prefill" || len(c.Stuck[0].Events) == 0 {
		t.Fatalf("cancels-reached names no room with its history: %+v", c.Stuck)
	}
}

// TestRoomsTerminalNamesStuckRoom checks a failure carries the room, its
// history and the faults active when it stopped moving.
func TestRoomsTerminalNamesStuckRoom(t *testing.T) {
	t.Parallel()
	evs := readLog(t, "bad-rooms-terminal.jsonl")
	c, _ := Judge(evs, Floor{}).Get(contract.CheckRoomsTerminal)
	if len(c.Stuck) != 1 || c.Stuck[0].Room != 42 || len(c.Stuck[0].Events) != 3 {
		t.Fatalf("stuck rooms: %+v", c.Stuck)
	}
	if c.Stuck[0].Since.Seconds() != 3 {
		t.Fatalf("stuck since %v, want 3s (updated - base wall)", c.Stuck[0].Since)
	}
}

// TestSkipDoesNotMakeInconclusive: a target without /debug/rooms and
// in-process goroutines can still pass.
func TestSkipDoesNotMakeInconclusive(t *testing.T) {
	t.Parallel()
	evs := readLog(t, "good.jsonl")
	var ext []Event
	for _, e := range evs {
		if e.Rooms != nil {
			continue
		}
		if e.Leaks != nil {
			e.Leaks = &Leaks{Detail: "skipped"}
		}
		ext = append(ext, e)
	}
	checks := Judge(ext, Floor{})
	if checks.Verdict() != Pass {
		t.Fatalf("verdict %s: %+v", checks.Verdict(), checks)
	}
	for _, n := range []string{contract.CheckRoomsTerminal, contract.CheckNoLeaks} {
		if c, _ := checks.Get(n); c.Status != Skip {
			t.Errorf("%s: %s, want skip", n, c.Status)
		}
	}
}

// TestIntegrityCountsEngineWitness: a late KV write the engine saw land in
// another request's pages fails integrity even when every answer that was
// read matched (its victim may have been cancelled unread).
func TestIntegrityCountsEngineWitness(t *testing.T) {
	t.Parallel()
	ok := outcome.Outcome{Kind: outcome.KindCompleted}
	for _, tc := range []struct {
		name      string
		foreign   float64
		unchecked bool
		want      Status
	}{{"clean", 0, false, Pass}, {"witnessed", 3, false, Fail}, {"external model", 0, true, Skip}, {"external witnessed", 2, true, Fail}} {
		evs := []Event{
			{Type: "run", Run: &RunInfo{Scenario: "x", AnswersUnchecked: tc.unchecked}},
			{Type: "outcome", Outcome: &ok},
			{Type: "scrape", Source: "decode", Scrape: &Scrape{Counters: map[string]float64{contract.MetricForeignWrites: tc.foreign}}},
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckIntegrity)
		if c.Status != tc.want {
			t.Errorf("%s: integrity %s (%s), want %s", tc.name, c.Status, c.Summary, tc.want)
		}
	}
}

// readLog reads a recorded log from testdata/ (the package itself does no IO).
func readLog(t *testing.T, name string) []Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := ReadEvents(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs
}

// TestReadEventsNamesTheLine: a malformed line is an error with its number.
func TestReadEventsNamesTheLine(t *testing.T) {
	t.Parallel()
	_, err := ReadEvents(strings.NewReader("{\"t\":1,\"type\":\"run\"}\n\n{not json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error %v, want one naming line 3", err)
	}
}

// TestCancelReachedRules: one side's room history against a cancel at 1s.
func TestCancelReachedRules(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, kind string) contract.Event { return contract.Event{At: base.Add(d), Kind: kind} }
	s := time.Second
	for _, tc := range []struct {
		name    string
		last    string
		events  []contract.Event
		excused bool
		want    int
	}{
		{"client's abort in time", contract.StateFailed, []contract.Event{at(0, "status"), at(s+20*time.Millisecond, EventAbortRequest), at(2*s, "clear")}, false, reachedByClient},
		{"ended before the cancel", contract.StateSuccess, []contract.Event{at(0, "status"), at(s/2, "clear")}, false, reachedByClient},
		{"completed racing the cancel", contract.StateSuccess, []contract.Event{at(0, "status"), at(s+12*time.Millisecond, "clear")}, false, reachedByClient},
		{"failed by the peer's ABORT, racing the router's cancel", contract.StateFailed, []contract.Event{at(0, "status"), at(s+25*time.Millisecond, EventAbortReceived), at(s+30*time.Millisecond, "clear")}, false, reachedByPeer},
		{"a millisecond after the cancel", contract.StateFailed, []contract.Event{at(0, "status"), at(s+time.Millisecond, EventAbortReceived), at(s+time.Millisecond, "clear")}, false, reachedByPeer},
		{"failed by a peer's ABORT long after", contract.StateFailed, []contract.Event{at(0, "status"), at(3*s, EventAbortReceived), at(3*s, "clear")}, false, notReached},
		{"ended by the peer's ABORT at its queue's pace, the router's cancel held by a fault", contract.StateFailed,
			[]contract.Event{at(0, "status"), at(s+2*time.Millisecond, EventAbortReceived), at(2*s, "clear")}, true, reachedByPeer},
		{"ended by its own sweep, the cancel and the peer's ABORT held by a fault", contract.StateWaitingForInput,
			[]contract.Event{at(0, "status"), at(2*s+200*time.Millisecond, "clear")}, true, reachedByRace},
		{"ended by the peer's ABORT past the cancel bound, under a fault", contract.StateFailed,
			[]contract.Event{at(0, "status"), at(s+2*time.Millisecond, EventAbortReceived), at(7*s, "clear")}, true, notReached},
		{"failed by a peer's ABORT from before the cancel, ended just after", contract.StateFailed, []contract.Event{at(0, "status"), at(s/2, EventAbortReceived), at(s+10*time.Millisecond, "clear")}, false, reachedByRace},
		{"ended by a deadline", contract.StateFailed, []contract.Event{at(0, "status"), at(11*s, "clear")}, false, notReached},
		{"failed on its own as the client left", contract.StateFailed, []contract.Event{at(0, "status"), at(s+time.Millisecond, "clear")}, false, reachedByRace},
		{"failed on its own 2s after the cancel", contract.StateFailed, []contract.Event{at(0, "status"), at(3*s, "clear")}, false, notReached},
		{"abort too late", contract.StateFailed, []contract.Event{at(0, "status"), at(7*s, EventAbortRequest)}, false, notReached},
		{"abort late under a fault", contract.StateFailed, []contract.Event{at(0, "status"), at(7*s, EventAbortRequest)}, true, reachedByClient},
		{"still held, no abort", contract.StateBootstrapping, []contract.Event{at(0, "status")}, true, notReached},
	} {
		r := contract.RoomRecord{Room: 1, State: tc.last, LastState: tc.last, Events: tc.events}
		if why, got, _ := cancelReached(contract.SidePrefill, r, s, tc.excused, base); got != tc.want {
			t.Errorf("%s: reached %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

// TestCancelReachedDecodeGeneratesForNobody: a room that completes 3s
// after its client left is prefill finishing its KV send as the cancel
// travels, but decode generating an answer nobody reads, unless a fault
// overlapped; within DefaultRaceWindow both raced the cancel.
func TestCancelReachedDecodeGeneratesForNobody(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s := time.Second
	done := func(d time.Duration) contract.RoomRecord {
		return contract.RoomRecord{Room: 1, State: contract.StateSuccess, LastState: contract.StateSuccess,
			Events: []contract.Event{{At: base, Kind: "status"}, {At: base.Add(d), Kind: "clear"}}}
	}
	for _, tc := range []struct {
		role    string
		end     time.Duration
		excused bool
		want    int
	}{
		{contract.SidePrefill, 4 * s, false, reachedByClient},
		{contract.SideDecode, 4 * s, false, notReached},
		{contract.SideDecode, 4 * s, true, reachedByClient},
		{contract.SideDecode, s + 300*time.Millisecond, false, reachedByClient},
	} {
		why, got, _ := cancelReached(tc.role, done(tc.end), s, tc.excused, base)
		if got != tc.want {
			t.Errorf("%s completing at %v (cancel at 1s, fault %v): reached %v (%s), want %v", tc.role, tc.end, tc.excused, got, why, tc.want)
		}
	}
}

// A late metadata or ABORT can re-open a room a side already cleared; the
// cancel is judged on the record of the request the client cancelled, the
// one created first, whichever order the log holds them in.
func TestCancelJudgesTheFirstRecord(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	orig := contract.RoomRecord{Room: 7, Created: base, LastState: contract.StateFailed,
		Events: []contract.Event{{At: base.Add(time.Second + 10*time.Millisecond), Kind: EventAbortRequest}, {At: base.Add(2 * time.Second), Kind: "clear"}}}
	reopened := contract.RoomRecord{Room: 7, Created: base.Add(3 * time.Second), LastState: contract.StateFailed,
		Events: []contract.Event{{At: base.Add(3 * time.Second), Kind: "status"}, {At: base.Add(14 * time.Second), Kind: "clear"}}}
	for _, order := range [][]contract.RoomRecord{{orig, reopened}, {reopened, orig}} {
		m := map[uint64]contract.RoomRecord{}
		for _, r := range order {
			keepFirst(m, r.Room, r)
		}
		if got := m[7]; !got.Created.Equal(base) {
			t.Errorf("kept the record created at %v, want the first (%v)", got.Created, base)
		}
		if _, how, _ := cancelReached(contract.SidePrefill, m[7], time.Second, false, base); how == notReached {
			t.Error("the cancelled request's record says the cancel did not reach it")
		}
	}
	if _, how, _ := cancelReached(contract.SidePrefill, reopened, time.Second, false, base); how != notReached {
		t.Error("the re-opened record alone reads as reached: the test no longer shows the difference")
	}
}

// TestIntegrityGarbledRefused: every control message corrupt-messages
// garbled must be counted as malformed by its receiver (prefill for
// control/N, decode for notify/N); fewer means garbage was read as valid.
// Truncation, a window another fault overlapped, an engine without the
// counter and a receiver whose process was killed are not judged; a
// counter that drops is a restarted process counting from zero.
func TestIntegrityGarbledRefused(t *testing.T) {
	t.Parallel()
	ok := outcome.Outcome{Kind: outcome.KindCompleted}
	fault := func(name string, start, end time.Duration, corrupted int64) Event {
		rec := schedule.Record{Fault: name, Applied: true, Start: start, End: end}
		rec.Evidence.Effective = corrupted > 0
		rec.Evidence.Counters = map[string]int64{"corrupted": corrupted}
		return Event{Type: EvFault, Fault: &rec}
	}
	kill := func(name string, at time.Duration) Event {
		return Event{Type: EvFault, Fault: &schedule.Record{Window: 9, Fault: name, Layer: faults.LayerProcess, Applied: true, Start: at, End: at + time.Second}}
	}
	scrape := func(engine string, malformed float64) Event {
		sc := &Scrape{EngineType: engine, Counters: map[string]float64{}}
		if malformed >= 0 {
			sc.Counters[contract.MetricMalformedControl] = malformed
		}
		return Event{Type: "scrape", Source: "http://" + engine + "/metrics", Scrape: sc}
	}
	s := time.Second
	for _, tc := range []struct {
		name string
		evs  []Event
		want Status
		say  string
	}{
		{"all refused", []Event{fault("corrupt(control/0,abort,garble)", s, 2*s, 4), fault("corrupt(notify/0,status+ack,garble)", 3*s, 4*s, 2),
			scrape("prefill", 0), scrape("decode", 0), scrape("prefill", 4), scrape("decode", 2)}, Pass, ""},
		{"prefill read one as valid", []Event{fault("corrupt(control/0,abort,garble)", s, 2*s, 4),
			scrape("prefill", 1), scrape("prefill", 4)}, Fail, "prefill refused 3 of 4 control messages garbled on control/0"},
		{"decode read them as valid", []Event{fault("corrupt(notify/0,status+ack,garble)", s, 2*s, 5),
			scrape("decode", 0), scrape("decode", 0)}, Fail, "decode refused 0 of 5"},
		{"truncated may parse", []Event{fault("corrupt(control/0,metadata,truncate)", s, 2*s, 4),
			scrape("prefill", 0), scrape("prefill", 1)}, Pass, ""},
		{"a reset overlapped", []Event{fault("corrupt(control/0,abort,garble)", s, 3*s, 4), fault("reset-peer(control/0)", 2*s, 4*s, 0),
			scrape("prefill", 0), scrape("prefill", 1)}, Pass, ""},
		{"no counter exported", []Event{fault("corrupt(control/0,abort,garble)", s, 2*s, 4),
			scrape("prefill", -1), scrape("prefill", -1)}, Pass, ""},
		{"counted across a restart", []Event{fault("corrupt(notify/0,status+ack,garble)", s, 2*s, 5),
			scrape("decode", 1), scrape("decode", 4), scrape("decode", 2), scrape("decode", 3)}, Pass, ""},
		{"too few across a restart", []Event{fault("corrupt(notify/0,status+ack,garble)", s, 2*s, 5),
			scrape("decode", 1), scrape("decode", 3), scrape("decode", 1)}, Fail, "decode refused 3 of 5"},
		{"receiver killed later", []Event{fault("corrupt(notify/0,status+ack,garble)", s, 2*s, 5), kill("sigkill(decode,restart)", 5*s),
			scrape("decode", 0), scrape("decode", 1)}, Pass, ""},
		{"the other side killed", []Event{fault("corrupt(notify/0,status+ack,garble)", s, 2*s, 5), kill("sigkill(prefill,restart)", 5*s),
			scrape("decode", 0), scrape("decode", 1)}, Fail, "decode refused 1 of 5"},
	} {
		evs := append([]Event{{Type: "run", Run: &RunInfo{Scenario: "x"}}, {Type: "outcome", Outcome: &ok}}, tc.evs...)
		c, _ := Judge(evs, Floor{}).Get(contract.CheckIntegrity)
		if c.Status != tc.want || !strings.Contains(c.Summary, tc.say) {
			t.Errorf("%s: integrity %s (%s), want %s saying %q", tc.name, c.Status, c.Summary, tc.want, tc.say)
		}
	}
}

// TestRevivedRooms: a rank's Failed is final until that rank clears the
// room; any other status after it is a revival, on either side. On
// prefill, so is any other status after the client's abort was recorded.
func TestRevivedRooms(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(ms, rank int, kind, state string) contract.Event {
		return contract.Event{At: base.Add(time.Duration(ms) * time.Millisecond), Rank: rank, Kind: kind, State: state, Detail: "w: why"}
	}
	st, ab := contract.RoomEventStatus, EventAbortRequest
	recs := map[string]map[uint64]contract.RoomRecord{
		contract.SidePrefill: {
			// Failed, then a worker's Transferring: revived.
			1: {Room: 1, Events: []contract.Event{ev(0, 0, st, contract.StateBootstrapping), ev(10, 0, st, contract.StateFailed), ev(20, 0, st, contract.StateTransferring)}},
			// Failed, cleared, then reused: no revival.
			2: {Room: 2, Events: []contract.Event{ev(0, 0, st, contract.StateFailed), ev(5, 0, contract.RoomEventClear, ""), ev(9, 0, st, contract.StateBootstrapping)}},
			// Failed on rank 1 only; rank 0 goes on: no revival.
			3: {Room: 3, Events: []contract.Event{ev(0, 1, st, contract.StateFailed), ev(3, 0, st, contract.StateSuccess), ev(4, 1, st, contract.StateFailed)}},
			// The client's abort recorded, every rank Failed with it: no revival.
			5: {Room: 5, Events: []contract.Event{ev(0, 0, st, contract.StateBootstrapping), ev(0, 1, st, contract.StateBootstrapping),
				ev(7, 0, ab, ""), ev(7, 0, st, contract.StateFailed), ev(7, 1, st, contract.StateFailed)}},
			// The client's abort recorded, then rank 1 transfers: the abort was lost.
			6: {Room: 6, Events: []contract.Event{ev(0, 0, st, contract.StateBootstrapping), ev(0, 1, st, contract.StateBootstrapping),
				ev(7, 0, ab, ""), ev(9, 1, st, contract.StateTransferring)}},
			// The client left after the room ended: noted on the cleared room, then the room reused.
			7: {Room: 7, Events: []contract.Event{ev(0, 0, st, contract.StateSuccess), ev(1, 0, contract.RoomEventClear, ""),
				ev(2, 0, ab, ""), ev(3, 0, st, contract.StateBootstrapping)}},
		},
		contract.SideDecode: {
			// Out of order in the record, in order in time: revived.
			4: {Room: 4, Events: []contract.Event{ev(30, 0, st, contract.StateSuccess), ev(10, 0, st, contract.StateFailed)}},
			// Decode applies a client's abort at its next step, which may
			// find the last chunk in: Success after the abort is no revival.
			8: {Room: 8, Events: []contract.Event{ev(0, 0, st, contract.StateTransferring), ev(5, 0, ab, ""), ev(6, 0, st, contract.StateSuccess)}},
		},
	}
	got := revivedRooms(recs)
	if len(got) != 3 || !strings.HasPrefix(got[0], "room 4 on decode rank 0: Failed at") || !strings.Contains(got[0], "then Success") ||
		!strings.HasPrefix(got[1], "room 1 on prefill rank 0: Failed at") || !strings.Contains(got[1], "then Transferring") ||
		!strings.HasPrefix(got[2], "room 6 on prefill rank 1: the client's abort recorded at") || !strings.Contains(got[2], "then Transferring") {
		t.Fatalf("revived: %q; want rooms 4 (decode), 1 and 6 (prefill)", got)
	}
}
