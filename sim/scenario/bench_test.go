package scenario

import (
	"context"
	"testing"

	"github.com/pdchaos/pdchaos/sim"
)

// BenchmarkSeeds runs one seed per iteration of a few presets as Explore
// does (no trace, no events kept), reporting simulated requests per
// second of wall time: the figure a 100,000-seed sweep rests on. Profile
// with go test -run - -bench Seeds -cpuprofile / -memprofile ./sim/scenario.
func BenchmarkSeeds(b *testing.B) {
	for _, name := range []string{"abort-storm", "kill-all-cascade", "lost-control-messages", "tp2-abort-storm", "prefill-lost"} {
		b.Run(name, func(b *testing.B) {
			cfg := preset(b, name)
			b.ReportAllocs()
			reqs := 0
			seed := uint64(0)
			for b.Loop() {
				seed++
				r, err := sim.Run(context.Background(), cfg, seed, sim.Options{})
				if err != nil {
					b.Fatal(err)
				}
				reqs += r.Requests
			}
			b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}
