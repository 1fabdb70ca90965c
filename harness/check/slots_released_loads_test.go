package check

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// A log whose queues the recorder read live judges those: a stale logged
// transfer gauge of 17 beside a live 0 passes, a live 3 fails naming the
// gauge, whatever /metrics said.
func TestSlotsReleasedJudgesLiveLoads(t *testing.T) {
	t.Parallel()
	scrape := func(live, logged float64) *Scrape {
		g := map[string]float64{}
		for _, n := range contract.NeededGauges("decode") {
			g[n] = 0
		}
		g[contract.MetricDecodeTransferQueue] = live
		return &Scrape{EngineType: "decode", Gauges: g,
			Ranks:  map[string]map[string]float64{contract.MetricDecodeTransferQueue: {"dp_rank=0": live}},
			Logged: map[string]float64{contract.MetricDecodeTransferQueue: logged}}
	}
	for _, tc := range []struct {
		name         string
		live, logged float64
		want         Status
	}{
		{"stale gauge, live queue empty", 0, 17, Pass},
		{"live queue pinned, gauge stale at 0", 3, 0, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := NewView([]Event{
				{T: 1, Type: EvScrape, Source: "d", Scrape: scrape(0, 0)},
				{T: 2, Type: EvScrape, Source: "d", Scrape: scrape(tc.live, tc.logged)},
			})
			r := checkSlotsReleased(v)
			if r.Status != tc.want || r.Evidence["live_loads_scrapes"] != 2 {
				t.Fatalf("%s: %s (evidence %v), want %s", r.Status, r.Summary, r.Evidence, tc.want)
			}
			if tc.want == Fail && !strings.Contains(r.Summary, contract.MetricDecodeTransferQueue) {
				t.Errorf("failure %q does not name the gauge", r.Summary)
			}
		})
	}
}
