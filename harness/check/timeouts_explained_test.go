package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// TestJudgeOrderIsCheckNames: the judge runs exactly contract.CheckNames,
// in that order.
func TestJudgeOrderIsCheckNames(t *testing.T) {
	t.Parallel()
	var got []string
	for _, c := range Judge(readLog(t, "good.jsonl"), Floor{}) {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, contract.CheckNames()) {
		t.Fatalf("judge order %v, want %v", got, contract.CheckNames())
	}
}

// TestTimeoutsExplainedCounts: each backstop of the good log is explained
// the way it was written to be: one by the fault it lived through, four by
// load (one of them only when ranks merge with MIN, one on the ACK, one a
// bootstrap deadline while decode waited for pages), two by a race (one on
// decode's metadata), one waiting deadline by that bootstrap deadline
// before it, and bad-cancels-reached-deadline's bootstrap deadline by the
// fault its room overlapped.
func TestTimeoutsExplainedCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want map[string]int64
	}{
		{"good-timeouts-explained.jsonl", map[string]int64{"backstops_fired": 8, explainedFault: 1, explainedLoad: 4, explainedRace: 2, explainedPeer: 1, "unexplained": 0}},
		{"bad-cancels-reached-deadline.jsonl", map[string]int64{"backstops_fired": 1, explainedFault: 1, "states_excused_by_fault": 1}},
		{"good.jsonl", map[string]int64{"backstops_fired": 0, "states_over_deadline": 0}},
	} {
		c, _ := Judge(readLog(t, tc.file), Floor{}).Get(contract.CheckTimeoutsExplained)
		if c.Status != Pass {
			t.Errorf("%s: %s (%s), want pass", tc.file, c.Status, c.Summary)
		}
		for k, w := range tc.want {
			if c.Evidence[k] != w {
				t.Errorf("%s: %s = %d, want %d (%v)", tc.file, k, c.Evidence[k], w, c.Evidence)
			}
		}
		if c.Evidence["states_checked"] == 0 {
			t.Errorf("%s: no room state checked against its deadline", tc.file)
		}
	}
}

// TestTimeoutsExplainedFailureCarriesHistories: an unexplained backstop
// names the room on both sides with their histories.
func TestTimeoutsExplainedFailureCarriesHistories(t *testing.T) {
	t.Parallel()
	c, _ := Judge(readLog(t, "bad-timeouts-explained-peer-cleared.jsonl"), Floor{}).Get(contract.CheckTimeoutsExplained)
	if len(c.Stuck) != 2 || c.Stuck[0].Role != "decode" || c.Stuck[1].Role != "prefill" || c.Stuck[0].Room != 2102 ||
		len(c.Stuck[0].Events) == 0 || len(c.Stuck[1].Events) == 0 {
		t.Fatalf("stuck rooms %+v, want room 2102 on decode then prefill, with histories", c.Stuck)
	}
	c, _ = Judge(readLog(t, "bad-timeouts-explained-state-bound.jsonl"), Floor{}).Get(contract.CheckTimeoutsExplained)
	if len(c.Stuck) == 0 || c.Stuck[0].Room != 2104 || c.Stuck[0].Since != 3200*time.Millisecond {
		t.Fatalf("stuck rooms %+v, want room 2104 since 3.2s, when its Transferring stay began", c.Stuck)
	}
	if strings.Contains(c.Summary, "history") || len(c.Details) != 2 || !strings.Contains(c.Details[0], "history: ") {
		t.Fatalf("summary %q, details %q: want the stays of both ranks, histories in the details only", c.Summary, c.Details)
	}
}

// inSim marks evs as a simulator run's log.
func inSim(evs []Event) []Event {
	run := *evs[0].Run
	run.Target = SimTarget
	evs[0].Run = &run
	return evs
}

// TestTimeoutsExplainedExcuses: the same bad logs pass when a regression is
// on, and a state's overrun passes when a process fault (which stops the
// loop that enforces it) overlapped it, but not a network one; an external
// target (no engine config) is skipped; a partial engine config is
// defaulted, not read as zero deadlines.
func TestTimeoutsExplainedExcuses(t *testing.T) {
	t.Parallel()
	withEngine := func(evs []Event, f func(*contract.EngineConfig)) []Event {
		out := slices.Clone(evs)
		run := *out[0].Run
		if run.Engine != nil {
			cfg := *run.Engine
			f(&cfg)
			run.Engine = &cfg
		}
		out[0].Run = &run
		return out
	}
	withFault := func(evs []Event, layer faults.Layer) []Event {
		name := map[faults.Layer]string{faults.LayerProcess: faults.StopName(contract.SidePrefill), faults.LayerNetwork: "latency(kv/0,down 1s)"}[layer]
		return append(slices.Clone(evs), Event{Type: EvFault, Fault: &schedule.Record{Window: 9, Fault: name, Layer: layer,
			Applied: true, Start: 5 * time.Second, End: 6 * time.Second, Evidence: faults.Evidence{Effective: true}}})
	}
	noPeer := readLog(t, "bad-timeouts-explained-no-peer.jsonl")
	bound := readLog(t, "bad-timeouts-explained-state-bound.jsonl")
	for _, tc := range []struct {
		name string
		evs  []Event
		want Status
		key  string
	}{
		{"regression on", withEngine(noPeer, func(c *contract.EngineConfig) { c.Regressions = []string{contract.FreeBeforeAck} }), Pass, explainedRegression},
		{"fault over the room", withFault(noPeer, faults.LayerNetwork), Pass, explainedFault},
		{"process fault over the stay", withFault(bound, faults.LayerProcess), Pass, "states_excused_by_fault"},
		{"network fault over the stay", withFault(bound, faults.LayerNetwork), Fail, "states_over_deadline"},
		{"external target", withEngine(noPeer, func(*contract.EngineConfig) {}), Skip, ""},
		{"partial engine config", withEngine(readLog(t, "good-timeouts-explained.jsonl"), func(c *contract.EngineConfig) {
			// Every deadline but bootstrap's, waiting's and the ACK's
			// defaulted (the log's waiting backstops fired 2s after their
			// metadata, its ACK give-up 2s after its ABORT: with their
			// defaults they would be premature); room 2007's metadata
			// comes 8.1s after prefill's bootstrap deadline, past four of
			// those 2s deadlines (contract.FailureMemory).
			*c = contract.EngineConfig{BootstrapTimeout: 2 * time.Second, WaitingTimeout: 2 * time.Second, AckTimeout: 2 * time.Second}
		}), Pass, "states_checked"},
		// The same log judged as if decode's waiting deadline were 3s: its
		// waiting backstops fired 2s after their metadata, before it. No
		// fault or load excuses a deadline measured from the wrong moment.
		{"backstop before its deadline", withEngine(readLog(t, "good-timeouts-explained.jsonl"), func(c *contract.EngineConfig) {
			c.WaitingTimeout = 3 * time.Second
		}), Fail, "backstops_premature"},
		// Judged as if the waiting deadline were 1.5s, the same backstops
		// fired 0.5s late: within StateMargin live (a loaded machine's
		// loop), a deadline not kept in the simulator, whose clock is the
		// engine's (a scan that missed the room until a later one).
		{"backstop late, live", withEngine(readLog(t, "good-timeouts-explained.jsonl"), func(c *contract.EngineConfig) {
			c.WaitingTimeout = 1500 * time.Millisecond
		}), Pass, "states_checked"},
		{"backstop late, simulator", inSim(withEngine(readLog(t, "good-timeouts-explained.jsonl"), func(c *contract.EngineConfig) {
			c.WaitingTimeout = 1500 * time.Millisecond
		})), Fail, "backstops_overdue"},
	} {
		evs := tc.evs
		if tc.name == "external target" {
			run := *evs[0].Run
			run.Engine, run.Target = nil, "external"
			evs[0].Run = &run
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckTimeoutsExplained)
		if c.Status != tc.want || (tc.key != "" && c.Evidence[tc.key] == 0) {
			t.Errorf("%s: %s (%s) %v, want %s with %s", tc.name, c.Status, c.Summary, c.Evidence, tc.want, tc.key)
		}
	}
}

// TestPeerAtMergesRanksWithMin: the peer's state is its ranks' MIN, a
// cleared rank reads Failed, and the end is when the MIN first turned
// terminal.
func TestPeerAtMergesRanksWithMin(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(ms int, rank int, kind, state string) contract.Event {
		return contract.Event{At: base.Add(time.Duration(ms) * time.Millisecond), Rank: rank, Kind: kind, State: state}
	}
	r := contract.RoomRecord{Events: []contract.Event{
		at(0, 0, "status", contract.StateWaitingForInput), at(0, 1, "status", contract.StateWaitingForInput),
		at(100, 0, "status", contract.StateSuccess), at(150, 0, "abort-ack", contract.StateSuccess),
		at(200, 1, "status", contract.StateTransferring), at(300, 1, "status", contract.StateSuccess),
		at(400, 0, "clear", contract.StateSuccess),
	}}
	for _, tc := range []struct {
		ms     int
		state  string
		live   bool
		endMS  int // -1: not ended
		notice int // -1: none yet
	}{
		{-1, "none", false, -1, -1},
		{50, contract.StateWaitingForInput, true, -1, -1},
		{250, contract.StateTransferring, true, -1, 150},
		{350, contract.StateSuccess, false, 300, 150},
		{450, contract.StateFailed, false, 300, 150},
	} {
		p := peerAt(r, base.Add(time.Duration(tc.ms)*time.Millisecond), "abort-ack")
		end := -1
		if !p.endAt.IsZero() {
			end = int(p.endAt.Sub(base).Milliseconds())
		}
		notice := -1
		if !p.notice.IsZero() {
			notice = int(p.notice.Sub(base).Milliseconds())
		}
		if p.state != tc.state || p.live != tc.live || end != tc.endMS || notice != tc.notice {
			t.Errorf("at %dms: state %s live %v end %d notice %d, want %s %v %d %d", tc.ms, p.state, p.live, end, notice,
				tc.state, tc.live, tc.endMS, tc.notice)
		}
	}
}

// TestUnsentFailNotice: decode's waiting deadline is unexplained, fault or
// not, when prefill had cleared the room as Failed with decode's
// TransferInfo in hand at least a race window before and recorded no
// failure notice; a notice sent (or deferred), a room not yet cleared, a
// clear without the TransferInfo or one just before the deadline is not
// judged here.
func TestUnsentFailNotice(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, kind, state string) contract.Event {
		return contract.Event{At: at(ms), Side: contract.SidePrefill, Kind: kind, State: state}
	}
	onRank := func(e contract.Event, rank int) contract.Event { e.Rank = rank; return e }
	waiting := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 1, at: at(3000)}
	meta, failed, clear := ev(100, contract.RoomEventMetadata, ""), ev(500, contract.RoomEventStatus, contract.StateFailed), ev(600, contract.RoomEventClear, "")
	// A client retrying in its room: decode sent the retry's TransferInfo
	// at 1000ms, after prefill had cleared the first request (which held
	// the first TransferInfo) as Failed at 600ms.
	retrySent := contract.Event{At: at(1000), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent}
	for _, tc := range []struct {
		name   string
		f      firing
		own    []contract.Event
		events []contract.Event
		judged bool
	}{
		{"cleared Failed, no notice", waiting, nil, []contract.Event{meta, failed, clear}, true},
		{"an earlier request's clear, before decode's TransferInfo", waiting, []contract.Event{retrySent},
			[]contract.Event{meta, failed, clear, ev(1100, contract.RoomEventStatus, contract.StateFailed), ev(1100, contract.RoomEventClear, "")}, false},
		{"an earlier request's TransferInfo, cleared with it", waiting, nil,
			[]contract.Event{meta, ev(400, contract.RoomEventStatus, contract.StateSuccess), ev(450, contract.RoomEventClear, ""), failed, clear}, false},
		{"the retry's own TransferInfo, cleared Failed", waiting, []contract.Event{retrySent},
			[]contract.Event{meta, failed, clear, ev(1050, contract.RoomEventMetadata, ""), ev(1100, contract.RoomEventStatus, contract.StateFailed), ev(1150, contract.RoomEventClear, "")}, true},
		{"notice sent", waiting, nil, []contract.Event{meta, failed, ev(600, contract.RoomEventFailNotice, ""), clear}, false},
		{"not cleared yet", waiting, nil, []contract.Event{meta, failed}, false},
		{"no TransferInfo", waiting, nil, []contract.Event{failed, clear}, false},
		{"cleared Success", waiting, nil, []contract.Event{meta, ev(500, contract.RoomEventStatus, contract.StateSuccess), clear}, false},
		{"cleared just before", firing{b: waiting.b, room: 1, at: at(1200)}, nil, []contract.Event{meta, failed, clear}, false},
		{"another backstop", firing{b: contract.LookupBackstop(contract.BackstopAck), room: 1, at: at(3000)}, nil, []contract.Event{meta, failed, clear}, false},
		// TP 2: rank 1 held the TransferInfo and told decode; rank 0 never
		// got one (lost on the way) and cleared first, with no one to tell.
		{"tp2: the rank that cleared first had no TransferInfo", waiting, nil, []contract.Event{onRank(meta, 1), onRank(failed, 0), onRank(clear, 0),
			onRank(failed, 1), onRank(ev(610, contract.RoomEventFailNotice, ""), 1), onRank(ev(620, contract.RoomEventClear, ""), 1)}, false},
		{"tp2: the rank that held it cleared without a notice", waiting, nil, []contract.Event{onRank(meta, 1), onRank(failed, 1), onRank(clear, 1)}, true},
	} {
		why := unsentFailNotice(tc.f, contract.RoomRecord{Room: 1, Events: tc.own}, contract.RoomRecord{Room: 1, Events: tc.events}, true)
		if (why != "") != tc.judged || (tc.judged && !strings.Contains(why, "sent it no failure notice")) {
			t.Errorf("%s: %q, judged %v", tc.name, why, tc.judged)
		}
	}
}

// TestTimeoutsExplainedNoticeIgnored: decode's waiting deadline fired
// 1.81s after prefill sent it the room's failure notice. A fault on the KV
// link cannot lose that notice, so it explains nothing (live and simulated
// names alike); one on a notify link, or a process fault, can.
func TestTimeoutsExplainedNoticeIgnored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault string
		layer faults.Layer
		want  Status
	}{
		{"reset_peer(kv/0,up,0s)", faults.LayerNetwork, Fail},
		{"reset-peer@kv/0", faults.LayerNetwork, Fail},
		{"reset_peer(notify/0,up,0s)", faults.LayerNetwork, Pass},
		{"drop-messages@notify/0", faults.LayerProtocol, Pass},
		{"sigstop(decode)", faults.LayerProcess, Pass},
	} {
		evs := readLog(t, "bad-timeouts-explained-notice-ignored.jsonl")
		n := 0
		for _, e := range evs {
			if e.Type == EvFault && e.Fault.Window == 1 {
				e.Fault.Fault, e.Fault.Layer = tc.fault, tc.layer
				n++
			}
		}
		if n == 0 {
			t.Fatal("the log has no KV-link fault to rename")
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckTimeoutsExplained)
		if c.Status != tc.want {
			t.Errorf("fault %s: %s (%s), want %s", tc.fault, c.Status, c.Summary, tc.want)
		}
		if tc.want == Fail && !strings.Contains(c.Summary, "failure notice 1.81s before") {
			t.Errorf("fault %s: summary %q does not say the notice was sent 1.81s before", tc.fault, c.Summary)
		}
	}
}

// A decode room still waiting for its KV after prefill's process had been
// stopped for longer than decode's heartbeats take to declare it lost is a
// violation (the loss fails it at once), but not when the stop was
// shorter, the heartbeats slower, or the process stopped was decode's.
// Room 2007 comes at 3.3s, sends its TransferInfo at 13.4s and waits
// until 15.4s.
func TestTimeoutsExplainedRoomOutlivesPrefillLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		fault      string
		start, end time.Duration
		heartbeat  time.Duration
		want       Status
	}{
		{"prefill stopped past the heartbeat's verdict", "sigstop(prefill)", 13 * time.Second, 16 * time.Second, 200 * time.Millisecond, Fail},
		{"prefill killed until the heal, as the simulator and live name it", "sigkill(prefill)", 13 * time.Second, 16 * time.Second, 200 * time.Millisecond, Fail},
		// Restarted at once: down for its start-up, whatever the window.
		{"prefill killed and restarted at once", "sigkill(prefill,restart)", 13 * time.Second, 16 * time.Second, 200 * time.Millisecond, Pass},
		{"stop shorter than the verdict", "sigstop(prefill)", 13 * time.Second, 14 * time.Second, 200 * time.Millisecond, Pass},
		// Room 2007 came at 3.3s and waited for pages until 13.4s: a
		// room still waiting for pages is paired with its prefill too,
		// and the loss fails it (decode's heartbeat fails the rooms in
		// prealloc as well).
		{"room waiting for pages at the verdict", "sigstop(prefill)", 12 * time.Second, 16 * time.Second, 200 * time.Millisecond, Fail},
		{"heartbeats too slow to call it", "sigstop(prefill)", 13 * time.Second, 16 * time.Second, time.Second, Pass},
		{"decode stopped", "sigstop(decode)", 13 * time.Second, 16 * time.Second, 200 * time.Millisecond, Pass},
	} {
		evs := slices.Clone(readLog(t, "good-timeouts-explained.jsonl"))
		run := *evs[0].Run
		cfg := *run.Engine
		cfg.HeartbeatInterval = tc.heartbeat
		run.Engine = &cfg
		evs[0].Run = &run
		evs = append(evs, Event{Type: EvFault, Fault: &schedule.Record{Window: 9, Fault: tc.fault, Layer: faults.LayerProcess,
			Applied: true, Start: tc.start, End: tc.end, Evidence: faults.Evidence{Effective: true}}})
		c, _ := Judge(evs, Floor{}).Get(contract.CheckTimeoutsExplained)
		if c.Status != tc.want || (tc.want == Fail && (c.Evidence["outlived_peer_loss"] != 1 || !strings.Contains(c.Summary, "room 2007 on decode still WaitingForInput"))) {
			t.Errorf("%s: %s (%s) %v, want %s", tc.name, c.Status, c.Summary, c.Evidence, tc.want)
		}
	}
}

// Decode's own stop holds its heartbeats too: prefill's loss is only due
// once decode has been running long enough to call it.
func TestTimeoutsExplainedPeerLossWaitsForDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		decodeFrom, decodeTo time.Duration
		want                 Status
	}{
		{"decode up throughout", 0, 0, Fail},
		{"decode stopped over the verdict, then too little time left", 12*time.Second + 500*time.Millisecond, 14 * time.Second, Pass},
		{"decode stopped and back early enough", 12 * time.Second, 12*time.Second + 100*time.Millisecond, Fail},
	} {
		evs := slices.Clone(readLog(t, "good-timeouts-explained.jsonl"))
		run := *evs[0].Run
		cfg := *run.Engine
		cfg.HeartbeatInterval = 200 * time.Millisecond
		run.Engine = &cfg
		evs[0].Run = &run
		evs = append(evs, Event{Type: EvFault, Fault: &schedule.Record{Window: 9, Fault: "sigstop(prefill)", Layer: faults.LayerProcess,
			Applied: true, Start: 13 * time.Second, End: 16 * time.Second, Evidence: faults.Evidence{Effective: true}}})
		if tc.decodeTo > 0 {
			evs = append(evs, Event{Type: EvFault, Fault: &schedule.Record{Window: 10, Fault: "sigstop(decode)", Layer: faults.LayerProcess,
				Applied: true, Start: tc.decodeFrom, End: tc.decodeTo, Evidence: faults.Evidence{Effective: true}}})
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckTimeoutsExplained)
		if c.Status != tc.want {
			t.Errorf("%s: %s (%s) %v, want %s", tc.name, c.Status, c.Summary, c.Evidence, tc.want)
		}
	}
}

// Only a fault that stops a role's scheduler (its process stopped or
// killed, its scheduler stalled) excuses a room of that role outliving a
// state deadline: the peer stopped, a paused transfer worker or a stalled
// bootstrap loop leave the deadline to fire.
func TestStopFaultDuringIsTheRolesOwn(t *testing.T) {
	t.Parallel()
	rec := func(name string, layer faults.Layer) schedule.Record {
		return schedule.Record{Fault: name, Layer: layer, Applied: true, Start: time.Second, End: 3 * time.Second}
	}
	cases := []struct {
		fault   schedule.Record
		role    string
		excuses bool
	}{
		{rec("sigstop(prefill)", faults.LayerProcess), contract.SidePrefill, true},
		{rec("sigkill(prefill,restart)", faults.LayerProcess), contract.SidePrefill, true},
		{rec("stall-scheduler(prefill/-1)", faults.LayerEngine), contract.SidePrefill, true},
		{rec("stall-scheduler(decode/0)", faults.LayerEngine), contract.SideDecode, true},
		{rec("sigstop(decode)", faults.LayerProcess), contract.SidePrefill, false},
		{rec("stall-scheduler(decode/0)", faults.LayerEngine), contract.SidePrefill, false},
		{rec("pause-transfer-workers(prefill/-1/worker=-1)", faults.LayerEngine), contract.SidePrefill, false},
		{rec("stall-bootstrap-loop(prefill/0)", faults.LayerEngine), contract.SidePrefill, false},
		{rec("latency(kv/0,10ms)", faults.LayerNetwork), contract.SidePrefill, false},
	}
	for _, c := range cases {
		v := &View{Faults: []schedule.Record{c.fault}}
		if got := v.stopFaultDuring(c.role, 2*time.Second, 5*time.Second); got != c.excuses {
			t.Errorf("%s excuses a %s overrun: %v, want %v", c.fault.Fault, c.role, got, c.excuses)
		}
		if v.stopFaultDuring(c.role, 4*time.Second, 5*time.Second) {
			t.Errorf("%s, healed at 3s, excuses an overrun from 4s", c.fault.Fault)
		}
	}
}

// Each ABORT resend restarts decode's ACK clock: the next resend and the
// give-up come at least ack_timeout after it.
func TestResentTooSoon(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	resend := contract.LookupBackstop(contract.BackstopAbortResend)
	giveUp := contract.LookupBackstop(contract.BackstopAck)
	at := func(ms int, b contract.Backstop) contract.Event {
		return contract.Event{At: base.Add(time.Duration(ms) * time.Millisecond), Side: "decode", Kind: b.Kind, Detail: b.Detail}
	}
	abort := contract.Event{At: base, Side: "decode", Kind: "abort-sent"}
	for _, tc := range []struct {
		name string
		evs  []contract.Event
		want string
	}{
		{"spaced", []contract.Event{abort, at(2100, resend), at(4200, resend), at(6300, giveUp)}, ""},
		{"a burst of resends", []contract.Event{abort, at(2100, resend), at(2110, resend)}, "resent an ABORT 10ms after its last resend"},
		{"an early give-up", []contract.Event{abort, at(2100, resend), at(4200, resend), at(4300, giveUp)}, "gave up on the ACK 100ms after its last resend"},
		{"a give-up with no resend", []contract.Event{abort, at(100, giveUp)}, ""},
	} {
		got := resentTooSoon(contract.RoomRecord{Room: 1, Side: "decode", Events: tc.evs}, 2*time.Second)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Decode may declare prefill lost only after HeartbeatFailures misses in
// a row, so only when prefill's process was unreachable the whole time
// they took: two intervals of stop, or one of kill (refused at once).
// Room 7 fails with the loss at 10s; the heartbeat interval is 500ms.
func TestLossesTooSoon(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	const at = 10 * time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	lostRoom := contract.RoomRecord{Room: 7, Side: contract.SideDecode, Events: []contract.Event{
		{At: base.Add(at - 3*time.Second), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent},
		{At: base.Add(at), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateFailed, Detail: "receiver: " + contract.PeerLostDetail + "127.0.0.1:8998"},
	}}
	otherRoom := contract.RoomRecord{Room: 8, Side: contract.SideDecode, Events: []contract.Event{
		{At: base.Add(at), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateFailed, Detail: "receiver: waiting timeout"},
	}}
	win := func(name string, from, to time.Duration) schedule.Record {
		return schedule.Record{Fault: name, Layer: faults.LayerProcess, Applied: true, Start: at + from, End: at + to}
	}
	for _, tc := range []struct {
		name   string
		room   contract.RoomRecord
		faults []schedule.Record
		judged int64
		early  int
	}{
		{"stopped two intervals", lostRoom, []schedule.Record{win("sigstop(prefill)", ms(-1200), ms(100))}, 1, 0},
		{"stopped still, no end", lostRoom, []schedule.Record{{Fault: "sigstop(prefill)", Layer: faults.LayerProcess, Applied: true, Start: at - ms(1200)}}, 1, 0},
		{"one short stop", lostRoom, []schedule.Record{win("sigstop(prefill)", ms(-700), ms(100))}, 1, 1},
		{"two short stops with a good beat between", lostRoom, []schedule.Record{win("sigstop(prefill)", ms(-2000), ms(-1300)), win("sigstop(prefill)", ms(-700), 0)}, 1, 1},
		{"stops back to back", lostRoom, []schedule.Record{win("sigstop(prefill)", ms(-1200), ms(-600)), win("sigstop(prefill)", ms(-600), 0)}, 1, 0},
		{"killed one interval", lostRoom, []schedule.Record{win("sigkill(prefill,restart)", ms(-600), ms(-500))}, 1, 0},
		{"killed just now", lostRoom, []schedule.Record{win("sigkill(prefill,restart)", ms(-300), ms(100))}, 1, 1},
		{"no fault of prefill near", lostRoom, []schedule.Record{win("sigstop(prefill)", -6*time.Second, -5*time.Second)}, 0, 0},
		{"decode stopped too", lostRoom, []schedule.Record{win("sigstop(prefill)", ms(-700), ms(100)), win("sigstop(decode)", -2*time.Second, -time.Second)}, 0, 0},
		{"a failure of another cause", otherRoom, []schedule.Record{win("sigstop(prefill)", ms(-700), ms(100))}, 0, 0},
	} {
		v := &View{Run: RunInfo{BaseWall: base}, Faults: tc.faults}
		ev := map[string]int64{}
		got := v.lossesTooSoon(map[uint64]contract.RoomRecord{tc.room.Room: tc.room}, contract.EngineConfig{HeartbeatInterval: 500 * time.Millisecond}, ev)
		if len(got) != tc.early || ev["peer_losses_judged"] != tc.judged {
			t.Errorf("%s: %d too soon (%v), %d judged; want %d and %d", tc.name, len(got), got, ev["peer_losses_judged"], tc.early, tc.judged)
		}
		for _, l := range got {
			if !strings.Contains(l.head, "room 7") || l.at != at {
				t.Errorf("%s: %q at %v; want room 7 at %v", tc.name, l.head, l.at, at)
			}
		}
	}
}

// A prefill rank that failed a room before decode's TransferInfo reached
// it answers that TransferInfo Failed (or ignores it, for a room decode
// aborted): taking it as new within the failure memory is a violation,
// and so is decode waiting out its deadline for an answer prefill never
// sent, unless a fault could have lost the TransferInfo or the answer.
// Bootstrap timeout 2 s, so the memory is 8 s.
func TestFailuresPrefillDidNotAnswer(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	cfg := contract.EngineConfig{BootstrapTimeout: 2 * time.Second, WaitingTimeout: 2 * time.Second}
	s := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Second))) }
	pe := func(at float64, kind, state, detail string) contract.Event {
		return contract.Event{At: s(at), Side: contract.SidePrefill, Kind: kind, State: state, Detail: detail}
	}
	failed := []contract.Event{
		pe(1, contract.RoomEventStatus, contract.StateBootstrapping, "sender: "+contract.CreatedFor("r1")),
		pe(3, contract.RoomEventStatus, contract.StateFailed, "sender: bootstrap timeout"),
		pe(3.1, contract.RoomEventClear, "", "request finished"),
	}
	with := func(es ...contract.Event) contract.RoomRecord {
		return contract.RoomRecord{Room: 5, Side: contract.SidePrefill, Events: append(slices.Clone(failed), es...)}
	}
	t.Run("taken as new", func(t *testing.T) {
		t.Parallel()
		v := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}}
		for _, tc := range []struct {
			name string
			rec  contract.RoomRecord
			bad  bool
		}{
			{"answered", with(pe(4, contract.RoomEventFailNotice, "", "Failed status sent to decode")), false},
			{"taken as new", with(pe(4, contract.RoomEventMetadata, "", "4 pages from d0"), pe(4, contract.RoomEventStatus, contract.StateWaitingForInput, "bootstrap: metadata arrived")), true},
			{"after the memory", with(pe(12, contract.RoomEventMetadata, "", "4 pages from d0")), false},
			{"a new request first", with(pe(5, contract.RoomEventStatus, contract.StateBootstrapping, "sender: "+contract.CreatedFor("r2")), pe(6, contract.RoomEventMetadata, "", "4 pages from d0")), false},
			{"answered, then a duplicate", with(pe(4, contract.RoomEventFailNotice, "", "sent"), pe(4.5, contract.RoomEventMetadata, "", "4 pages from d0")), false},
		} {
			if head, _ := v.failureUnanswered(tc.rec, cfg); (head != "") != tc.bad {
				t.Errorf("%s: %q; want a violation: %v", tc.name, head, tc.bad)
			}
		}
		aborted := contract.RoomRecord{Room: 6, Side: contract.SidePrefill, Events: []contract.Event{
			pe(1, contract.RoomEventAbortReceived, "", "ABORT from decode"),
			pe(1, contract.RoomEventAbortTombstone, contract.StateFailed, "bootstrap: decode ABORT"),
		}}
		if head, _ := v.failureUnanswered(aborted, cfg); head != "" {
			t.Errorf("decode's ABORT remembered: %q; want no violation", head)
		}
		aborted.Events = append(aborted.Events, pe(2, contract.RoomEventMetadata, "", "4 pages from d0"))
		if head, _ := v.failureUnanswered(aborted, cfg); head == "" {
			t.Error("a TransferInfo taken for a room decode aborted: no violation")
		}
		killed := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}, Faults: []schedule.Record{{Fault: "sigkill(prefill,restart)", Layer: faults.LayerProcess, Applied: true, Start: 3500 * time.Millisecond, End: 3600 * time.Millisecond}}}
		if head, _ := killed.failureUnanswered(with(pe(4, contract.RoomEventMetadata, "", "4 pages from d0")), cfg); head != "" {
			t.Errorf("prefill killed in between: %q; want no violation (its successor remembers nothing)", head)
		}
	})
	t.Run("decode left waiting", func(t *testing.T) {
		t.Parallel()
		decode := contract.RoomRecord{Room: 5, Side: contract.SideDecode, Events: []contract.Event{
			{At: s(4), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent},
			{At: s(6), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateFailed, Detail: "receiver: waiting timeout"},
		}}
		f := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 5, at: s(6)}
		for _, tc := range []struct {
			name    string
			prefill contract.RoomRecord
			faults  []schedule.Record
			bad     bool
		}{
			{"never answered", with(), nil, true},
			{"answered", with(pe(4.1, contract.RoomEventFailNotice, "", "sent")), nil, false},
			{"a control link dropping messages", with(), []schedule.Record{{Fault: "drop(control/0,metadata)", Layer: faults.LayerProtocol, Applied: true, Start: 3 * time.Second, End: 5 * time.Second}}, false},
			{"paused transfer workers cannot lose it", with(), []schedule.Record{{Fault: "pause-transfer-workers(prefill/0)", Layer: faults.LayerEngine, Applied: true, Start: 3 * time.Second, End: 5 * time.Second}}, true},
			{"decode stopped before it sent", with(), []schedule.Record{{Fault: "sigstop(decode)", Layer: faults.LayerProcess, Applied: true, Start: time.Second, End: 3900 * time.Millisecond}}, true},
		} {
			v := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}, Faults: tc.faults}
			if why := v.failureNotAnswered(f, decode, tc.prefill, true); (why != "") != tc.bad {
				t.Errorf("%s: %q; want a violation: %v", tc.name, why, tc.bad)
			}
		}
	})
}

// TestLaterFailureNotAnswered: decode's waiting deadline is unexplained
// when prefill failed and cleared the room's request after decode sent
// its TransferInfo, neither holding it then nor told to abort, and never
// answered: a client retrying in its room after decode forgot it meets
// prefill's tombstone, its request failed at once, and the TransferInfo,
// ahead of it, must be answered Failed.
func TestLaterFailureNotAnswered(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cfg := contract.EngineConfig{BootstrapTimeout: 2 * time.Second, WaitingTimeout: 2 * time.Second}
	s := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Second))) }
	pe := func(at float64, kind, state string) contract.Event {
		return contract.Event{At: s(at), Side: contract.SidePrefill, Kind: kind, State: state}
	}
	// The first request in the room, aborted by decode, tombstoned.
	first := []contract.Event{pe(0.1, contract.RoomEventMetadata, ""), pe(0.3, contract.RoomEventAbortReceived, ""),
		pe(0.3, contract.RoomEventAbortTombstone, contract.StateFailed), pe(0.3, contract.RoomEventClear, "")}
	retry := []contract.Event{pe(1.2, contract.RoomEventStatus, contract.StateFailed), pe(1.2, contract.RoomEventClear, "")}
	decode := contract.RoomRecord{Room: 5, Side: contract.SideDecode, Events: []contract.Event{
		{At: s(0.05), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent},
		{At: s(1), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent},
	}}
	f := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 5, at: s(3)}
	onRank := func(es []contract.Event, rank int) []contract.Event {
		out := slices.Clone(es)
		for i := range out {
			out[i].Rank = rank
		}
		return out
	}
	join := func(es ...[]contract.Event) contract.RoomRecord {
		return contract.RoomRecord{Room: 5, Side: contract.SidePrefill, Events: slices.Concat(es...)}
	}
	for _, tc := range []struct {
		name    string
		f       firing
		prefill contract.RoomRecord
		faults  []schedule.Record
		bad     bool
	}{
		{"failed on the tombstone, never answered", f, join(first, retry), nil, true},
		{"answered on arrival", f, join(first, []contract.Event{pe(1.05, contract.RoomEventFailNotice, "")}, retry), nil, false},
		{"answered after the failure", f, join(first, retry, []contract.Event{pe(1.5, contract.RoomEventFailNotice, "")}), nil, false},
		{"decode's ABORT first", f, join(first, []contract.Event{pe(1.1, contract.RoomEventAbortReceived, "")}, retry), nil, false},
		{"held the TransferInfo (judged as an unsent notice)", f, join(first, []contract.Event{pe(1.05, contract.RoomEventMetadata, "")}, retry), nil, false},
		{"only the first request failed", f, join(first), nil, false},
		{"tp2: rank 0 told decode, rank 1 had no TransferInfo yet", f, join(first, []contract.Event{pe(1.05, contract.RoomEventFailNotice, "")}, onRank(retry, 1)), nil, false},
		{"tp2: rank 1 failed it unanswered", f, join(first, onRank(retry, 1)), nil, true},
		{"cleared just before the deadline", firing{b: f.b, room: 5, at: s(1.5)}, join(first, retry), nil, false},
		{"a notify link dropping messages", f, join(first, retry), []schedule.Record{{Fault: "drop(notify/0,status)", Layer: faults.LayerProtocol, Applied: true, Start: 900 * time.Millisecond, End: 2 * time.Second}}, false},
		{"a KV link fault cannot lose it", f, join(first, retry), []schedule.Record{{Fault: "reset-peer@kv/0", Layer: faults.LayerNetwork, Applied: true, Start: 900 * time.Millisecond, End: 2 * time.Second}}, true},
	} {
		v := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}, Faults: tc.faults}
		if why := v.laterFailureNotAnswered(tc.f, decode, tc.prefill, true); (why != "") != tc.bad {
			t.Errorf("%s: %q; want a violation: %v", tc.name, why, tc.bad)
		}
	}
}

// TestFailNoticeSentForHeldPages: decode holds a room's pages, with no
// ABORT sent, for the Failed statuses of prefill ranks still writing. Its
// ABORT resend (or ACK give-up) is judged against the failure notices
// only once every rank had either sent one or written Success; a deferred
// notice is not yet sent, and a room decode sent an ABORT for waits for
// ACKs instead. Decode's waiting deadline counts only the notices of the
// room's current life (sent since decode's request was created).
func TestFailNoticeSentForHeldPages(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms, rank int, kind, state string) contract.Event {
		return contract.Event{At: at(ms), Rank: rank, Kind: kind, State: state}
	}
	resend := firing{b: contract.LookupBackstop(contract.BackstopAbortResend), room: 1, at: at(3000)}
	giveUp := firing{b: contract.LookupBackstop(contract.BackstopAck), room: 1, at: at(3000)}
	held := contract.RoomRecord{Room: 1, Events: []contract.Event{ev(400, 0, contract.RoomEventStatus, contract.StateFailed), ev(400, 0, "pages-held", "")}}
	aborted := contract.RoomRecord{Room: 1, Events: []contract.Event{ev(400, 0, contract.RoomEventAbortSent, "")}}
	notice0, notice1 := ev(300, 0, contract.RoomEventFailNotice, ""), ev(900, 1, contract.RoomEventFailNotice, "")
	// A room reused by a retry: decode's request created at 200 ms, then again at 1 s.
	waiting := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 1, at: at(3000)}
	created := func(ms int) contract.Event {
		e := ev(ms, 0, contract.RoomEventStatus, contract.StateBootstrapping)
		e.Detail = "receiver " + contract.CreatedFor("r")
		return e
	}
	retried := contract.RoomRecord{Room: 1, Events: []contract.Event{created(200), created(1000)}}
	for _, tc := range []struct {
		name string
		f    firing
		own  contract.RoomRecord
		peer []contract.Event
		tp   int
		want time.Time
	}{
		{"both ranks told", resend, held, []contract.Event{notice0, notice1}, 2, at(900)},
		{"both ranks told, the give-up", giveUp, held, []contract.Event{notice0, notice1}, 2, at(900)},
		{"one rank's Success stands for its notice", resend, held, []contract.Event{notice0, ev(700, 1, contract.RoomEventStatus, contract.StateSuccess)}, 2, at(700)},
		{"one rank never told", resend, held, []contract.Event{notice0}, 2, time.Time{}},
		{"a deferred notice is not sent", resend, held, []contract.Event{notice0, ev(900, 1, contract.RoomEventFailNoticeDeferred, "")}, 2, time.Time{}},
		{"told after the firing", resend, held, []contract.Event{notice0, ev(3100, 1, contract.RoomEventFailNotice, "")}, 2, time.Time{}},
		{"decode sent an ABORT", resend, aborted, []contract.Event{notice0, notice1}, 2, time.Time{}},
		{"tp 1", resend, held, []contract.Event{notice0}, 1, at(300)},
		{"waiting: the notice of this life", waiting, retried, []contract.Event{ev(1200, 0, contract.RoomEventFailNotice, "")}, 1, at(1200)},
		{"waiting: only an earlier life's notice", waiting, retried, []contract.Event{notice0}, 1, time.Time{}},
		{"waiting: one life", waiting, contract.RoomRecord{Room: 1, Events: []contract.Event{created(200)}}, []contract.Event{notice0}, 1, at(300)},
	} {
		got := failNoticeSent(tc.f, tc.own, contract.RoomRecord{Room: 1, Events: tc.peer}, true, tc.tp)
		if !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got.Sub(base), tc.want.Sub(base))
		}
	}
}

// TestNoticeFaultDuring: what can lose a failure notice prefill sent at 5s,
// judged over [4s, 9s]. A fault on prefill's engine loops holds only what
// it was on for when the notice was sent; duplicates lose nothing.
func TestNoticeFaultDuring(t *testing.T) {
	t.Parallel()
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	for _, tc := range []struct {
		fault      string
		layer      faults.Layer
		start, end float64
		want       bool
	}{
		{"stall-bootstrap-loop(prefill/1)", faults.LayerEngine, 3, 4.9, false},
		{"stall-bootstrap-loop(prefill/1)", faults.LayerEngine, 3, 5.2, true},
		{"pause-transfer-workers", faults.LayerEngine, 8, 10, false},
		{"stall-scheduler(decode/0)", faults.LayerEngine, 8, 10, true},
		{"stall-scheduler(decode/0)", faults.LayerEngine, 10, 11, false},
		{"duplicate(notify/0,all)", faults.LayerProtocol, 3, 10, false},
		{faults.DuplicateName("notify/0", []string{"status"}), faults.LayerProtocol, 3, 10, false},
		{"drop(notify/0,status)", faults.LayerProtocol, 3, 10, true},
		{"drop-messages@control/0", faults.LayerProtocol, 3, 10, false},
		{"sigstop(prefill)", faults.LayerProcess, 6, 7, true},
	} {
		v := &View{Faults: []schedule.Record{{Window: 1, Fault: tc.fault, Layer: tc.layer, Applied: true, Start: s(tc.start), End: s(tc.end)}}}
		if got := v.noticeFaultDuring(s(5), s(4), s(9)); got != tc.want {
			t.Errorf("%s %v..%v: %v, want %v", tc.fault, tc.start, tc.end, got, tc.want)
		}
	}
}

// TestRequestNeverCame: decode's waiting deadline on a room prefill holds
// only by decode's TransferInfo, with no request for it anywhere in the
// record, is the router leaving decode's leg to wait; a request that came
// (even after the deadline), another backstop or a truncated record is
// not judged by it.
func TestRequestNeverCame(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, kind, state, detail string) contract.Event {
		return contract.Event{At: at(ms), Side: contract.SidePrefill, Kind: kind, State: state, Detail: detail}
	}
	waiting := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 1, at: at(3000)}
	meta := []contract.Event{ev(100, contract.RoomEventMetadata, "", "98 pages"), ev(100, contract.RoomEventStatus, contract.StateWaitingForInput, "bootstrap: metadata arrived")}
	late := append(slices.Clone(meta), ev(3500, contract.RoomEventRequest, "", "sender "+contract.CreatedFor("r1")))
	long := slices.Clone(meta)
	for i := 0; len(long) < contract.MaxRoomEvents+1; i++ {
		long = append(long, ev(200+i, "metadata-duplicate", "", ""))
	}
	for _, tc := range []struct {
		name   string
		f      firing
		events []contract.Event
		judged bool
	}{
		{"only decode's TransferInfo", waiting, meta, true},
		{"the request came after the deadline", waiting, late, false},
		{"the request opened the room", waiting, []contract.Event{ev(50, contract.RoomEventStatus, contract.StateBootstrapping, "sender "+contract.CreatedFor("r1"))}, false},
		{"another backstop", firing{b: contract.LookupBackstop(contract.BackstopAck), room: 1, at: at(3000)}, meta, false},
		{"no record", waiting, nil, false},
		{"a truncated record", waiting, long, false},
	} {
		why := requestNeverCame(tc.f, contract.RoomRecord{Room: 1, Events: tc.events})
		if (why != "") != tc.judged || tc.judged && !strings.Contains(why, "prefill never got the room's request") {
			t.Errorf("%s: %q, judged %v", tc.name, why, tc.judged)
		}
	}
}

// TestTransferDoneAtThisLife: decode's waiting deadline is excused by no
// completed transfer but its own request's: in a room a retry reused,
// prefill's Success of the earlier request is not this one's KV.
func TestTransferDoneAtThisLife(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	status := func(ms int, state, detail string) contract.Event {
		return contract.Event{At: at(ms), Kind: contract.RoomEventStatus, State: state, Detail: detail}
	}
	created := func(ms int, rid string) contract.Event {
		return status(ms, contract.StateBootstrapping, "receiver "+contract.CreatedFor(rid))
	}
	f := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 1, at: at(5000)}
	prefill := contract.RoomRecord{Room: 1, Events: []contract.Event{status(100, contract.StateSuccess, "first request's KV"),
		{At: at(120), Kind: contract.RoomEventClear}}}
	for _, tc := range []struct {
		name string
		own  contract.RoomRecord
		want time.Time
	}{
		{"one life", contract.RoomRecord{Room: 1, Events: []contract.Event{created(0, "a")}}, at(100)},
		{"decode's request came after the Success", contract.RoomRecord{Room: 1, Events: []contract.Event{created(0, "a"), created(3000, "b")}}, time.Time{}},
	} {
		if got := transferDoneAt(f, tc.own, prefill, true); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got.Sub(base), tc.want.Sub(base))
		}
	}
}

// Prefill keeps a TransferInfo for a request yet to come for its bootstrap
// timeout: decode's waiting deadline on a room whose request prefill took
// within that time, and which prefill still held Bootstrapping (waiting
// for that TransferInfo) when the deadline fired, is the TransferInfo lost
// inside prefill, unless a fault that can lose it was on. A fault on the
// router's link to prefill cannot; a request later than the bootstrap
// timeout may find the TransferInfo swept.
func TestTransferInfoLost(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	cfg := contract.EngineConfig{BootstrapTimeout: 2 * time.Second, WaitingTimeout: 2 * time.Second}
	s := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Second))) }
	off := func(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
	decode := contract.RoomRecord{Room: 5, Side: contract.SideDecode, Events: []contract.Event{
		{At: s(1), Side: contract.SideDecode, Kind: contract.RoomEventMetadataSent, Detail: "12 pages per rank"}}}
	prefill := func(request float64, more ...contract.Event) contract.RoomRecord {
		es := []contract.Event{{At: s(request), Side: contract.SidePrefill, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping,
			Detail: "sender: " + contract.CreatedFor("r1")}}
		return contract.RoomRecord{Room: 5, Side: contract.SidePrefill, Events: append(es, more...)}
	}
	waiting := firing{b: contract.LookupBackstop(contract.BackstopWaiting), room: 5, at: s(3.05)}
	win := func(name string, layer faults.Layer) schedule.Record {
		return schedule.Record{Fault: name, Layer: layer, Applied: true, Start: off(0.5), End: off(4)}
	}
	for _, tc := range []struct {
		name   string
		peer   contract.RoomRecord
		faults []schedule.Record
		lost   bool
		sim    bool
	}{
		{"request after the TransferInfo, no fault", prefill(1.3), nil, true, false},
		{"request before the TransferInfo", prefill(0.9), nil, true, false},
		{"the router's link to prefill slowed", prefill(1.3), []schedule.Record{win("latency(router-prefill,up 300ms)", faults.LayerNetwork)}, true, false},
		{"control messages dropped", prefill(1.3), []schedule.Record{win("drop(control/0,metadata)", faults.LayerProtocol)}, false, false},
		{"prefill's bootstrap loop stalled", prefill(1.3), []schedule.Record{win("stall-bootstrap-loop(prefill/0)", faults.LayerEngine)}, false, false},
		{"request past the bootstrap timeout", prefill(3.01), nil, false, true},
		// Live a request 1.6s after the TransferInfo may have raced the
		// sweep (DefaultRaceWindow); the simulator's engine sweeps on its
		// own clock, within two check intervals of the deadline.
		{"request 1.6s after, live", prefill(2.6), nil, false, false},
		{"request 1.6s after, simulator", prefill(2.6), nil, true, true},
		{"the TransferInfo arrived", prefill(1.3, contract.Event{At: s(1.4), Side: contract.SidePrefill, Kind: contract.RoomEventStatus,
			State: contract.StateWaitingForInput, Detail: "bootstrap: metadata arrived"}), nil, false, false},
	} {
		v := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}, Faults: tc.faults}
		if tc.sim {
			v.Run.Target = SimTarget
		}
		why := v.transferInfoLost(waiting, decode, tc.peer, true)
		if (why != "") != tc.lost {
			t.Errorf("%s: %q, want lost %v", tc.name, why, tc.lost)
		}
	}
	bootstrap := firing{b: contract.LookupBackstop(contract.BackstopBootstrap), room: 5, at: s(3.35)}
	if why := (&View{Run: RunInfo{BaseWall: base, Engine: &cfg}}).transferInfoLost(bootstrap, prefill(1.3), decode, true); why != "" {
		t.Errorf("the bootstrap deadline judged as a lost TransferInfo: %q", why)
	}
}

// A fault on the client's or the router's link to prefill starts prefill's
// bootstrap clock late; it cannot hold back decode's TransferInfo, so it
// does not explain the bootstrap deadline, in the live name or the
// simulator's. Any other fault still may; decode's waiting deadline keeps
// every excuse.
func TestBootstrapDeadlineUnexcusedByTheRoutersLinkToPrefill(t *testing.T) {
	t.Parallel()
	boot, wait := contract.LookupBackstop(contract.BackstopBootstrap), contract.LookupBackstop(contract.BackstopWaiting)
	for _, tc := range []struct {
		fault      string
		boot, wait bool
	}{
		{"latency(router-prefill,up 1.5s)", false, true},
		{"latency@router-prefill", false, true},
		{"reset_peer(client-router,down 0s)", false, true},
		{"latency(router-decode,up 1.5s)", true, true},
		{"drop(control/0,metadata)", true, true},
		{faults.StopName("decode"), true, true},
	} {
		v := &View{Faults: []schedule.Record{{Fault: tc.fault, Applied: true, Start: time.Second, End: 2 * time.Second}}}
		if got := v.faultExplaining(boot, 0, 3*time.Second); got != tc.boot {
			t.Errorf("%s explains the bootstrap deadline: %v, want %v", tc.fault, got, tc.boot)
		}
		if got := v.faultExplaining(wait, 0, 3*time.Second); got != tc.wait {
			t.Errorf("%s explains the waiting deadline: %v, want %v", tc.fault, got, tc.wait)
		}
	}
}

// A room decode took after it had declared prefill lost is not failed by
// that loss (declared once): it waits for prefill as any later room does.
// One it took before, still waiting for pages or its KV at the verdict,
// is.
func TestOutlivedPeerLossJudgesFromTheRequest(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	cfg := contract.EngineConfig{HeartbeatInterval: 200 * time.Millisecond}
	s := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Second))) }
	room := func(arrived float64) contract.RoomRecord {
		return contract.RoomRecord{Room: 9, Side: contract.SideDecode, Events: []contract.Event{
			{At: s(arrived), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping, Detail: "receiver: " + contract.CreatedFor("r")},
			{At: s(arrived), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateWaitingForInput, Detail: "receiver: receiver init"},
			{At: s(8.5), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateFailed, Detail: "receiver: waiting timeout"}}}
	}
	v := &View{Run: RunInfo{BaseWall: base, Engine: &cfg}, Faults: []schedule.Record{{Window: 1, Fault: "sigstop(prefill)", Layer: faults.LayerProcess,
		Applied: true, Start: 3 * time.Second, End: 9 * time.Second}}}
	if why, _ := v.outlivedPeerLoss(room(3.05), cfg, nil); why == "" {
		t.Error("a room waiting for pages from before the stop outlived prefill's loss unjudged")
	}
	if why, _ := v.outlivedPeerLoss(room(6), cfg, nil); why != "" {
		t.Errorf("a room taken after the verdict: %q, want it not judged", why)
	}
}

// TestAckClockJudgedBothWays: the ABORT resend and the ACK give-up have no
// one event that starts their clock; they are judged from the latest
// event that restarts it (abort sent, resend, pages held for other ranks:
// contract.Backstop.ClockRestarts). A resend one ACK timeout after the
// ABORT passes; half a timeout after it is too soon, live or simulated;
// three timeouts after it is overdue, and half a second late only in the
// simulator (live, the state margin allows a loaded machine that much).
func TestAckClockJudgedBothWays(t *testing.T) {
	t.Parallel()
	// resend adds decode's resend of the first ABORT it sent, after it.
	resend := func(evs []Event, after time.Duration) []Event {
		for _, ev := range evs {
			if ev.Rooms == nil || ev.Rooms.Role != contract.SideDecode {
				continue
			}
			for i, r := range ev.Rooms.Ended {
				for _, e := range r.Events {
					if e.Kind != contract.RoomEventAbortSent {
						continue
					}
					r.Events = append(slices.Clone(r.Events), contract.Event{At: e.At.Add(after), Side: contract.SideDecode, Kind: contract.BackstopAbortResend,
						State: contract.StateFailed, Detail: contract.LookupBackstop(contract.BackstopAbortResend).Detail})
					ev.Rooms.Ended[i] = r
					return evs
				}
			}
		}
		t.Fatal("the log has no decode room that sent an ABORT")
		return nil
	}
	ack := 2 * time.Second // the log's ack_timeout
	for _, tc := range []struct {
		name               string
		evs                []Event
		premature, overdue bool
	}{
		{"resend on time, simulator", inSim(resend(readLog(t, "good-timeouts-explained.jsonl"), ack+10*time.Millisecond)), false, false},
		{"resend half a second late, simulator", inSim(resend(readLog(t, "good-timeouts-explained.jsonl"), ack+500*time.Millisecond)), false, true},
		{"resend three timeouts late, simulator", inSim(resend(readLog(t, "good-timeouts-explained.jsonl"), 3*ack)), false, true},
		{"resend half a timeout early, simulator", inSim(resend(readLog(t, "good-timeouts-explained.jsonl"), ack/2)), true, false},
		{"resend half a second late, live", resend(readLog(t, "good-timeouts-explained.jsonl"), ack+500*time.Millisecond), false, false},
		{"resend three timeouts late, live", resend(readLog(t, "good-timeouts-explained.jsonl"), 3*ack), false, true},
		{"resend half a timeout early, live", resend(readLog(t, "good-timeouts-explained.jsonl"), ack/2), true, false},
	} {
		c, _ := Judge(tc.evs, Floor{}).Get(contract.CheckTimeoutsExplained)
		if got := c.Evidence["backstops_premature"] > 0; got != tc.premature {
			t.Errorf("%s: premature %v, want %v: %s", tc.name, got, tc.premature, c.Summary)
		}
		if got := c.Evidence["backstops_overdue"] > 0; got != tc.overdue {
			t.Errorf("%s: overdue %v, want %v: %s", tc.name, got, tc.overdue, c.Summary)
		}
		if (tc.overdue || tc.premature) && (c.Status != Fail || !strings.Contains(c.Summary, "after its clock started ("+contract.RoomEventAbortSent+")")) {
			t.Errorf("%s: %s %q, want a failure naming the clock's start", tc.name, c.Status, c.Summary)
		}
	}
}
