package record

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

func sc(gauge, progress float64) check.Scrape {
	return check.Scrape{Gauges: map[string]float64{"g": gauge}, Counters: map[string]float64{"p": progress}}
}

// TestWatchdog feeds scrapes at given offsets and expects wedges at once.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	s := time.Second
	type obs struct {
		at    time.Duration
		s     check.Scrape
		wedge bool
	}
	for _, tc := range []struct {
		name string
		obs  []obs
	}{
		{"stuck gauge flagged once at window", []obs{
			{0, sc(3, 10), false}, {2 * s, sc(3, 10), false}, {5 * s, sc(3, 10), true}, {6 * s, sc(3, 10), false}}},
		{"progress keeps it alive", []obs{
			{0, sc(3, 10), false}, {3 * s, sc(3, 11), false}, {6 * s, sc(3, 12), false}, {9 * s, sc(3, 13), false}}},
		{"progress stops, then wedge", []obs{
			{0, sc(3, 10), false}, {3 * s, sc(3, 11), false}, {7 * s, sc(3, 11), false}, {8 * s, sc(3, 11), true}}},
		{"zero is idle, never a wedge", []obs{{0, sc(0, 1), false}, {10 * s, sc(0, 1), false}}},
		{"change restarts the window", []obs{
			{0, sc(3, 1), false}, {4 * s, sc(2, 1), false}, {8 * s, sc(2, 1), false}, {9 * s, sc(2, 1), true}}},
		{"failed scrape says nothing", []obs{
			{0, sc(3, 1), false}, {6 * s, check.Scrape{Err: "refused"}, false}, {7 * s, sc(3, 1), true}}},
		{"re-flag after a new episode", []obs{
			{0, sc(1, 1), false}, {5 * s, sc(1, 1), true}, {6 * s, sc(1, 2), false}, {11 * s, sc(1, 2), true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &Watchdog{Window: 5 * s, Gauges: []string{"g"}, Progress: []string{"p"}}
			for i, o := range tc.obs {
				got := w.Observe(o.at, "src", o.s)
				if (len(got) > 0) != o.wedge {
					t.Fatalf("observation %d at %v: wedges %v, want wedge=%v", i, o.at, got, o.wedge)
				}
				if o.wedge && (got[0].Gauge != "g" || got[0].At != o.at || got[0].Value != o.s.Gauges["g"]) {
					t.Fatalf("wedge %+v", got[0])
				}
			}
		})
	}
}

// qs is a scrape with waiting requests q and completions c.
func qs(q, c float64) check.Scrape {
	return check.Scrape{Gauges: map[string]float64{"q": q}, Counters: map[string]float64{"c": c}}
}

// TestWatchdogQueueGrowth: waiting requests growing while the engine
// completes nothing are flagged after the window, even while other
// progress counters move; a source that never completed is not judged.
func TestWatchdogQueueGrowth(t *testing.T) {
	t.Parallel()
	s := time.Second
	type obs struct {
		at    time.Duration
		s     check.Scrape
		wedge bool
	}
	for _, tc := range []struct {
		name string
		obs  []obs
	}{
		{"queue grows, completions stop", []obs{
			{0, qs(1, 10), false}, {2 * s, qs(5, 10), false}, {5 * s, qs(40, 10), true}, {6 * s, qs(41, 10), false}}},
		{"completions move: no wedge", []obs{
			{0, qs(1, 10), false}, {3 * s, qs(20, 11), false}, {6 * s, qs(30, 12), false}, {9 * s, qs(40, 13), false}}},
		{"queue flat, not growing: no queue wedge", []obs{
			{0, qs(3, 10), false}, {6 * s, qs(3, 10), false}, {9 * s, qs(2, 10), false}}},
		{"never completed (prefill): not judged", []obs{
			{0, qs(1, 0), false}, {6 * s, qs(9, 0), false}}},
		{"new episode after completions resume", []obs{
			{0, qs(1, 10), false}, {5 * s, qs(2, 10), true}, {6 * s, qs(2, 11), false}, {11 * s, qs(3, 11), true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Gauges and Progress are set apart, so only queue wedges show.
			w := &Watchdog{Window: 5 * s, Gauges: []string{}, Progress: []string{"other"}, Queues: []string{"q"}, Completions: []string{"c"}}
			for i, o := range tc.obs {
				got := w.Observe(o.at, "src", o.s)
				if (len(got) > 0) != o.wedge {
					t.Fatalf("observation %d at %v: wedges %v, want wedge=%v", i, o.at, got, o.wedge)
				}
				if o.wedge && (got[0].Kind != check.WedgeQueue || got[0].At != o.at || got[0].Value != o.s.Gauges["q"]) {
					t.Fatalf("wedge %+v", got[0])
				}
			}
		})
	}
}

// TestWatchdogRoomDeadline: a held room past its state's deadline plus the
// margin is flagged at once with its history; a state change restarts the
// clock; states without a deadline and targets without deadlines are not
// judged.
func TestWatchdogRoomDeadline(t *testing.T) {
	t.Parallel()
	s := time.Second
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	room := func(id uint64, state string, updated time.Duration) contract.RoomRecord {
		return contract.RoomRecord{Room: id, State: state, Updated: base.Add(updated),
			Events: []contract.Event{{At: base.Add(updated), Kind: "status", State: state}}}
	}
	deadlines := map[string]time.Duration{RoomDeadlineKey("prefill", contract.StateBootstrapping): 10 * s}
	type obs struct {
		at    time.Duration
		held  []contract.RoomRecord
		wedge uint64 // room flagged, 0 for none
	}
	for _, tc := range []struct {
		name      string
		deadlines map[string]time.Duration
		obs       []obs
	}{
		{"past deadline plus margin", deadlines, []obs{
			{1 * s, []contract.RoomRecord{room(7, contract.StateBootstrapping, 1*s)}, 0},
			{13 * s, []contract.RoomRecord{room(7, contract.StateBootstrapping, 1*s)}, 0},
			{14 * s, []contract.RoomRecord{room(7, contract.StateBootstrapping, 1*s)}, 7},
			{20 * s, []contract.RoomRecord{room(7, contract.StateBootstrapping, 1*s)}, 0}}},
		{"first seen late: its last update counts", deadlines, []obs{
			{20 * s, []contract.RoomRecord{room(8, contract.StateBootstrapping, 2*s)}, 8}}},
		{"state change restarts the clock", deadlines, []obs{
			{1 * s, []contract.RoomRecord{room(9, contract.StateWaitingForInput, 1*s)}, 0},
			{12 * s, []contract.RoomRecord{room(9, contract.StateBootstrapping, 12*s)}, 0},
			{20 * s, []contract.RoomRecord{room(9, contract.StateBootstrapping, 12*s)}, 0},
			{25 * s, []contract.RoomRecord{room(9, contract.StateBootstrapping, 12*s)}, 9}}},
		{"no deadline for the state", deadlines, []obs{
			{1 * s, []contract.RoomRecord{room(10, contract.StateTransferring, 0)}, 0},
			{60 * s, []contract.RoomRecord{room(10, contract.StateTransferring, 0)}, 0}}},
		{"external target: no deadlines", nil, []obs{
			{60 * s, []contract.RoomRecord{room(11, contract.StateBootstrapping, 0)}, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &Watchdog{Deadlines: tc.deadlines, Margin: 2 * s, BaseWall: base}
			for i, o := range tc.obs {
				got := w.ObserveRooms(o.at, "http://prefill", "prefill", o.held)
				if (len(got) > 0) != (o.wedge != 0) {
					t.Fatalf("observation %d at %v: wedges %v, want room %d", i, o.at, got, o.wedge)
				}
				if o.wedge != 0 && (got[0].Room != o.wedge || got[0].Kind != check.WedgeRoom || got[0].At != o.at ||
					len(got[0].Events) != 1 || got[0].Deadline != 10*s) {
					t.Fatalf("wedge %+v", got[0])
				}
			}
		})
	}
}

// TestURLWatchInconclusive: a watch vouches for a URL only when it saw it
// through: every scrape failed, a blind gap of a window, or more than a
// tenth of the scrapes failed each make it inconclusive.
func TestURLWatchInconclusive(t *testing.T) {
	t.Parallel()
	const window = time.Second
	for _, tc := range []struct {
		name string
		w    URLWatch
		want string
	}{
		{"all good", URLWatch{Scrapes: 40, Blind: 300 * time.Millisecond}, ""},
		{"one failure in forty", URLWatch{Scrapes: 40, Failed: 1, Blind: 600 * time.Millisecond, LastErr: "status 503"}, ""},
		{"every scrape failed", URLWatch{Scrapes: 3, Failed: 3, LastErr: "status 503"}, "every one of 3 scrapes failed (last: status 503)"},
		{"blind for a window", URLWatch{Scrapes: 40, Failed: 4, Blind: 1500 * time.Millisecond, LastErr: "timeout"}, "no good scrape for 1.5s, at least the wedge window 1s"},
		{"flapping", URLWatch{Scrapes: 20, Failed: 10, Blind: 500 * time.Millisecond, LastErr: "status 503"}, "10 of 20 scrapes failed, over 10%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.w.Inconclusive("u", window)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
