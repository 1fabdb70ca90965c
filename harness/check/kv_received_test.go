package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// Prefill's rank may write Success only after decode's rank noted the
// room's KV in (or, in runs recorded before the note, wrote Success
// itself). A Success without it is judged only when decode's record is
// known to be complete at that moment (cleared, or holding a later
// event), or when decode's process died well before it.
func TestSuccessesUnreceived(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	ev := func(side string, n, rank int, kind, state string) contract.Event {
		return contract.Event{At: ms(n), Side: side, Rank: rank, Kind: kind, State: state}
	}
	pSuccess := func(n, rank int) contract.Event {
		return ev("prefill", n, rank, contract.RoomEventStatus, contract.StateSuccess)
	}
	dStatus := func(n, rank int, state string) contract.Event {
		return ev("decode", n, rank, contract.RoomEventStatus, state)
	}
	dNote := func(n, rank int, kind string) contract.Event { return ev("decode", n, rank, kind, "") }
	waiting, failed, success := contract.StateWaitingForInput, contract.StateFailed, contract.StateSuccess
	received := contract.RoomEventKVReceived
	cases := []struct {
		name    string
		prefill []contract.Event
		decode  []contract.Event // nil: no decode record
		cleared bool
		kill    int    // ms from base a sigkill(decode,restart) started; 0 none
		want    string // "" passes; else a substring of the one violation
	}{
		{"received then success (NIXL)", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting), dNote(40, 0, received), dStatus(40, 0, success)}, true, 0, ""},
		{"received, Mooncake status lost", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting), dNote(40, 0, received), dStatus(9000, 0, failed)}, true, 0, ""},
		{"older run: decode's Success only", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting), dStatus(40, 0, success)}, true, 0, ""},
		{"no decode record", []contract.Event{pSuccess(50, 0)}, nil, false, 0, ""},
		{"decode's copy predates the Success", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting)}, false, 0, ""},
		{"failed later without the KV", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting), dStatus(9000, 0, failed)}, false, 0,
			"room 7 rank 0: prefill wrote Success at 10:00:00.050"},
		{"cleared before the Success", []contract.Event{pSuccess(50, 0)}, []contract.Event{dStatus(0, 0, waiting), dStatus(10, 0, failed)}, true, 0,
			"decode never held the room's KV on that rank"},
		{"the other rank's KV", []contract.Event{pSuccess(50, 0), pSuccess(60, 1)}, []contract.Event{dStatus(0, 0, waiting), dStatus(0, 1, waiting),
			dNote(40, 0, received), dStatus(40, 0, success), dStatus(9000, 1, failed)}, true, 0, "room 7 rank 1"},
		{"killed, acknowledged just before", []contract.Event{pSuccess(1300, 0)}, []contract.Event{dStatus(0, 0, waiting)}, false, 1000, ""},
		{"killed long before, no record", []contract.Event{pSuccess(2000, 0)}, nil, false, 1000, "decode's process was killed at 10:00:01.000 (sigkill(decode,restart))"},
		{"killed long before, stale record", []contract.Event{pSuccess(2000, 0)}, []contract.Event{dStatus(0, 0, waiting)}, false, 1000, "decode's history: 0s status"},
		{"killed before the room", []contract.Event{pSuccess(2000, 0)}, nil, false, -500, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := map[string]map[uint64]contract.RoomRecord{
				contract.SidePrefill: {7: {Room: 7, Side: "prefill", Created: base, Cleared: true, Events: c.prefill}},
			}
			if c.decode != nil {
				recs[contract.SideDecode] = map[uint64]contract.RoomRecord{7: {Room: 7, Side: "decode", Created: base, Cleared: c.cleared, Events: c.decode}}
			}
			v := &View{Run: RunInfo{BaseWall: base}}
			if c.kill != 0 {
				v.Faults = []schedule.Record{{Fault: "sigkill(decode,restart)", Layer: faults.LayerProcess, Applied: true,
					Start: time.Duration(c.kill) * time.Millisecond, End: time.Duration(c.kill+900) * time.Millisecond}}
			}
			got := v.successesUnreceived(recs)
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("flagged a Success decode acknowledged, or one it cannot judge: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Fatalf("got %q, want one violation containing %q", got, c.want)
			}
		})
	}
}

// TestSuccessesUnreceivedReusedRoom: a room a retry reused holds two lives
// on each side; prefill's Success is judged against decode's record of the
// same request (the same rid), not an earlier one's.
func TestSuccessesUnreceivedReusedRoom(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	ev := func(side string, n int, kind, state, detail string) contract.Event {
		return contract.Event{At: ms(n), Side: side, Kind: kind, State: state, Detail: detail}
	}
	create := func(side string, n int, rid string) contract.Event {
		return ev(side, n, contract.RoomEventStatus, contract.StateBootstrapping, "receiver "+contract.CreatedFor(rid))
	}
	first := []contract.Event{create("decode", 0, "a"), ev("decode", 10, contract.RoomEventStatus, contract.StateFailed, "abort")}
	prefill := []contract.Event{create("prefill", 0, "a"), ev("prefill", 12, contract.RoomEventStatus, contract.StateFailed, "abort"),
		create("prefill", 2000, "b"), ev("prefill", 2100, contract.RoomEventStatus, contract.StateSuccess, "last chunk done")}
	kill := []schedule.Record{{Fault: "sigkill(decode,restart)", Layer: faults.LayerProcess, Applied: true, Start: 2150 * time.Millisecond, End: 3 * time.Second}}
	early := []schedule.Record{{Fault: "sigkill(decode,restart)", Layer: faults.LayerProcess, Applied: true, Start: 1200 * time.Millisecond, End: 1500 * time.Millisecond}}
	for _, c := range []struct {
		name   string
		decode []contract.Event
		faults []schedule.Record
		want   string
	}{
		{"decode killed during the second life: only the first's record is left", first, kill, ""},
		{"no record of the second life, decode killed before it began: not judged", first, early, ""},
		{"no record of the second life, no kill: not judged (the record may predate it)", first, nil, ""},
		{"the second life received its KV", append(slices.Clone(first), create("decode", 2000, "b"), ev("decode", 2090, contract.RoomEventKVReceived, "", "")), nil, ""},
		{"the second life ended without its KV", append(slices.Clone(first), create("decode", 2000, "b"), ev("decode", 2050, contract.RoomEventStatus, contract.StateFailed, "abort")), nil,
			"decode never held the room's KV on that rank"},
		{"the first life's KV does not count for the second", []contract.Event{create("decode", 0, "a"), ev("decode", 5, contract.RoomEventKVReceived, "", ""),
			ev("decode", 10, contract.RoomEventStatus, contract.StateFailed, "abort"), create("decode", 2000, "b"), ev("decode", 2050, contract.RoomEventStatus, contract.StateFailed, "abort")}, nil,
			"decode never held the room's KV on that rank"},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := map[string]map[uint64]contract.RoomRecord{
				contract.SidePrefill: {7: {Room: 7, Side: "prefill", Created: base, Cleared: true, Events: prefill}},
				contract.SideDecode:  {7: {Room: 7, Side: "decode", Created: base, Cleared: true, Events: c.decode}},
			}
			v := &View{Run: RunInfo{BaseWall: base}, Faults: c.faults}
			got := v.successesUnreceived(recs)
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("flagged: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Fatalf("got %q, want one violation containing %q", got, c.want)
			}
		})
	}
}

// TestIntegritySuccessUnreceived: the rule fails integrity through Judge,
// from the rooms snapshots a run records, even when every answer matched.
func TestIntegritySuccessUnreceived(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ok := outcome.Outcome{Kind: outcome.KindCompleted}
	pre := contract.RoomRecord{Room: 3, Side: "prefill", Created: base, Cleared: true, Events: []contract.Event{
		{At: base.Add(time.Second), Side: "prefill", Kind: contract.RoomEventStatus, State: contract.StateSuccess, Detail: "last chunk 0 done"}}}
	for _, tc := range []struct {
		name string
		note bool
		want Status
	}{{"acknowledged", true, Pass}, {"never received", false, Fail}} {
		dec := contract.RoomRecord{Room: 3, Side: "decode", Created: base, Cleared: true, Events: []contract.Event{
			{At: base, Side: "decode", Kind: contract.RoomEventStatus, State: contract.StateWaitingForInput}}}
		if tc.note {
			dec.Events = append(dec.Events, contract.Event{At: base.Add(time.Second / 2), Side: "decode", Kind: contract.RoomEventKVReceived})
		}
		dec.Events = append(dec.Events, contract.Event{At: base.Add(30 * time.Second), Side: "decode", Kind: contract.RoomEventStatus, State: contract.StateFailed})
		evs := []Event{
			{Type: "run", Run: &RunInfo{Scenario: "x"}},
			{Type: "outcome", Outcome: &ok},
			{Type: "rooms", Source: "prefill", Rooms: &RoomsSnap{Role: contract.SidePrefill, Ended: []contract.RoomRecord{pre}}},
			{Type: "rooms", Source: "decode", Rooms: &RoomsSnap{Role: contract.SideDecode, Ended: []contract.RoomRecord{dec}}},
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckIntegrity)
		if c.Status != tc.want {
			t.Errorf("%s: integrity %s (%s), want %s", tc.name, c.Status, c.Summary, tc.want)
		}
	}
}

// Decode may decode from KV only prefill's rank has not failed: a Failed
// for the same request after decode's commit is flagged unless a fault was
// over the room, prefill took a cancel or an ABORT, its own backstop fired,
// or a new request had reopened the room.
func TestCommittedDisowned(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	ev := func(side string, n int, kind, state, detail string) contract.Event {
		return contract.Event{At: ms(n), Side: side, Kind: kind, State: state, Detail: detail}
	}
	created := func(n int, rid string) contract.Event {
		return ev("prefill", n, contract.RoomEventStatus, contract.StateBootstrapping, "sender: sender "+contract.CreatedFor(rid))
	}
	pFailed := func(n int) contract.Event {
		return ev("prefill", n, contract.RoomEventStatus, contract.StateFailed, "sender: decode reports the room inactive")
	}
	decode := []contract.Event{ev("decode", 0, contract.RoomEventStatus, contract.StateWaitingForInput, ""), ev("decode", 40, contract.RoomEventCommitted, "", "transfer done, decoding")}
	cases := []struct {
		name    string
		prefill []contract.Event
		fault   bool
		want    string
	}{
		{"success after the commit", []contract.Event{created(0, "a"), ev("prefill", 45, contract.RoomEventStatus, contract.StateSuccess, "")}, false, ""},
		{"failed after the commit", []contract.Event{created(0, "a"), pFailed(45)}, false, "room 7: decode committed its KV at 10:00:00.040 and decoded, then prefill rank 0 failed the transfer"},
		{"failed before the commit", []contract.Event{created(0, "a"), pFailed(30)}, false, ""},
		{"a fault over the room", []contract.Event{created(0, "a"), pFailed(45)}, true, ""},
		{"the client's cancel", []contract.Event{created(0, "a"), ev("prefill", 42, contract.RoomEventAbortRequest, "", ""), pFailed(45)}, false, ""},
		{"decode's ABORT", []contract.Event{created(0, "a"), ev("prefill", 42, contract.RoomEventAbortReceived, "", ""), pFailed(45)}, false, ""},
		{"prefill's inflight backstop", []contract.Event{created(0, "a"), ev("prefill", 45, contract.RoomEventStatus, contract.StateFailed, "scheduler: inflight timeout")}, false, ""},
		{"another request's failure", []contract.Event{created(0, "a"), ev("prefill", 41, contract.RoomEventStatus, contract.StateSuccess, ""), created(50, "b"), pFailed(60)}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := map[string]map[uint64]contract.RoomRecord{
				contract.SidePrefill: {7: {Room: 7, Side: "prefill", Created: base, Cleared: true, Events: c.prefill}},
				contract.SideDecode:  {7: {Room: 7, Side: "decode", Created: base, Cleared: true, Events: decode}},
			}
			v := &View{Run: RunInfo{BaseWall: base}}
			if c.fault {
				v.Faults = []schedule.Record{{Fault: "kv-link-reset(kv/0)", Layer: faults.LayerNetwork, Applied: true, Start: 20 * time.Millisecond, End: 30 * time.Millisecond}}
			}
			got := v.committedDisowned(recs)
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("flagged: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Fatalf("got %q, want one violation containing %q", got, c.want)
			}
		})
	}
}
