package target

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Every role process gets the scenario's gauge timing, so a procs run's
// engines set gauges as the scenario says; the default passes no flag.
func TestEngineArgsCarryGauges(t *testing.T) {
	t.Parallel()
	a := engineArgs(contract.EngineConfig{Gauges: contract.GaugesLogged, DecodeLogInterval: 5, IdleMetricsInterval: 3 * time.Second, NoLoads: true})
	for _, want := range []string{"--gauges=logged", "--decode-log-interval=5", "--idle-metrics-interval=3s", "--no-loads=true"} {
		if !slices.Contains(a, want) {
			t.Errorf("engine args %v lack %s", a, want)
		}
	}
	for _, a := range engineArgs(contract.EngineConfig{}) {
		for _, f := range []string{"--gauges", "--decode-log-interval", "--idle-metrics-interval", "--no-loads"} {
			if strings.HasPrefix(a, f) {
				t.Errorf("default config passes %s", a)
			}
		}
	}
}
