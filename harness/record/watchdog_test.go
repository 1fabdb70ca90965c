package record

import (
	"testing"
	"time"

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
