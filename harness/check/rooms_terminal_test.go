package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// A rank that recorded an event ending its room at once (a failed KV
// write, decode's ABORT) must be Failed, Success or cleared within the
// window; later, or never, is a failure the engine saw and ignored. The
// rule looks only at ranks that were live when the event came, and not at
// records that may have lost events.
func TestLingeringRooms(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	status := func(n, rank int, state string) contract.Event {
		return contract.Event{At: ms(n), Side: "prefill", Rank: rank, Kind: contract.RoomEventStatus, State: state}
	}
	note := func(n, rank int, kind string) contract.Event {
		return contract.Event{At: ms(n), Side: "prefill", Rank: rank, Kind: kind}
	}
	clear := func(n, rank int) contract.Event {
		return contract.Event{At: ms(n), Side: "prefill", Rank: rank, Kind: contract.RoomEventClear}
	}
	bootstrapping, transferring := contract.StateBootstrapping, contract.StateTransferring
	failed, success := contract.StateFailed, contract.StateSuccess
	writeErr, abort := contract.RoomEventTransferError, contract.RoomEventAbortReceived
	cases := []struct {
		name    string
		events  []contract.Event
		cleared bool
		want    string // "" passes; else a substring of the one violation
	}{
		{"failed at once", []contract.Event{status(0, 0, bootstrapping), status(10, 0, transferring), note(20, 0, writeErr), status(20, 0, failed), clear(30, 0)}, true, ""},
		{"failed within the window", []contract.Event{status(0, 0, transferring), note(20, 0, abort), status(900, 0, failed), clear(950, 0)}, true, ""},
		{"already failed", []contract.Event{status(0, 0, failed), note(20, 0, abort), clear(3000, 0)}, true, ""},
		{"already succeeded", []contract.Event{status(0, 0, success), note(20, 0, abort), clear(3000, 0)}, true, ""},
		{"not held", []contract.Event{note(0, 0, abort), status(3000, 0, failed), clear(3100, 0)}, true, ""},
		{"another rank's error", []contract.Event{status(0, 0, transferring), status(0, 1, transferring), note(10, 1, writeErr), status(10, 1, failed),
			status(2500, 0, success), clear(2600, 0), clear(2600, 1)}, true, ""},
		{"failed by a deadline later", []contract.Event{status(0, 0, transferring), note(20, 0, writeErr), status(2020, 0, failed), clear(2030, 0)}, true,
			"room 7 on prefill rank 0: transfer-error at 10:00:00.020"},
		{"went on", []contract.Event{status(0, 0, bootstrapping), note(20, 0, abort), status(1500, 0, transferring), status(1600, 0, success), clear(1700, 0)}, true,
			"still live 1.48s later"},
		{"cleared without Failed", []contract.Event{status(0, 0, transferring), note(20, 0, writeErr), clear(25, 0), status(26, 1, transferring), clear(40, 1)}, true, ""},
		{"never ended", []contract.Event{status(0, 0, transferring), note(20, 0, writeErr), status(10, 1, transferring), status(3000, 1, success), clear(3100, 1)}, true,
			"no Failed status on that rank in the record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := contract.RoomRecord{Room: 7, Side: "prefill", Created: base, Updated: c.events[len(c.events)-1].At, Cleared: c.cleared, Events: c.events}
			got := lingeringRooms(map[string]map[uint64]contract.RoomRecord{"prefill": {7: rec}}, time.Second)
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("flagged a room the fixed engine ends in time: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Fatalf("got %q, want one violation containing %q", got, c.want)
			}
			// The same history with events lost to the record's cap is
			// not judged.
			full := rec
			for nonClear(full.Events) < contract.MaxRoomEvents {
				full.Events = append(full.Events, note(5000, 3, "pages-held"))
			}
			if got := lingeringRooms(map[string]map[uint64]contract.RoomRecord{"prefill": {7: full}}, time.Second); len(got) > 0 {
				t.Fatalf("judged a record at the event cap: %v", got)
			}
		})
	}
	// Decode's events of the same kinds end nothing there.
	dec := contract.RoomRecord{Room: 8, Side: "decode", Cleared: true, Events: []contract.Event{
		{At: ms(0), Kind: contract.RoomEventStatus, State: transferring}, {At: ms(10), Kind: writeErr}, {At: ms(5000), Kind: contract.RoomEventStatus, State: failed}}}
	if got := lingeringRooms(map[string]map[uint64]contract.RoomRecord{"decode": {8: dec}}, time.Second); len(got) > 0 {
		t.Fatalf("judged decode by prefill's endings: %v", got)
	}
}

// A decode room taken for more pages a rank than the pool holds can only
// end by a cancel: a violation whatever its end; one that fits, one with
// no engine config (an external target) or a detail that does not parse
// is not judged.
func TestUnfittingRooms(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	rec := func(room uint64, detail string) contract.RoomRecord {
		return contract.RoomRecord{Room: room, Side: contract.SideDecode, Events: []contract.Event{
			{At: at, Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping},
			{At: at, Side: contract.SideDecode, Kind: contract.RoomEventPagesNeeded, Detail: detail},
			{At: at.Add(3 * time.Second), Side: contract.SideDecode, Kind: contract.RoomEventClear},
		}}
	}
	recs := map[string]map[uint64]contract.RoomRecord{contract.SideDecode: {
		1: rec(1, contract.PagesNeeded(160)), 2: rec(2, contract.PagesNeeded(161)), 3: rec(3, "many pages"),
	}}
	cfg := contract.EngineConfig{Pages: 160}
	got := unfittingRooms(&View{Run: RunInfo{Engine: &cfg}}, recs)
	if len(got) != 1 || !strings.Contains(got[0], "room 2:") || !strings.Contains(got[0], "needing 161 pages a rank, the pool holds 160") {
		t.Errorf("unfitting rooms %q, want room 2 only", got)
	}
	if got := unfittingRooms(&View{}, recs); got != nil {
		t.Errorf("no engine config: %q, want none judged", got)
	}
	if n, ok := contract.ParsePagesNeeded(contract.PagesNeeded(42)); !ok || n != 42 {
		t.Errorf("PagesNeeded(42) reads back as %d, %v", n, ok)
	}
}
