package gate

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/pdchaos/pdchaos/sim"
	simscenario "github.com/pdchaos/pdchaos/sim/scenario"
	"github.com/pdchaos/pdchaos/suites/labels"
)

// defaultSimSeeds is how many seeds of each preset the gate explores in
// the simulator. A live run is one interleaving per preset; the simulator
// walks many in the same minute, and a bug in engine/core that only some
// orderings reach (most planted bugs in failure paths are such) fails one
// of them. PDCHAOS_GATE_SIM_SEEDS overrides it (0 skips these specs).
const defaultSimSeeds = 100

// simSeeds reads PDCHAOS_GATE_SIM_SEEDS; a value that is no count fails
// the spec rather than quietly running the default.
func simSeeds() (int, error) {
	s := os.Getenv("PDCHAOS_GATE_SIM_SEEDS")
	if s == "" {
		return defaultSimSeeds, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("PDCHAOS_GATE_SIM_SEEDS=%q: want a seed count (0 skips the simulated presets)", s)
	}
	return n, nil
}

// simulatedPresets declares one spec per preset that explores its
// simulated seeds on the fixed engine and records which code probes they
// hit into cov. Declared inside the gate's container, before its code
// probes spec, so that spec counts them.
func simulatedPresets(v labels.Vocabulary, cov *probeCoverage) {
	for _, name := range presetNames() {
		It(name, v.Label(scenarioLabels(name)...), func(ctx SpecContext) {
			n, err := simSeeds()
			Expect(err).NotTo(HaveOccurred())
			if n == 0 {
				Skip("PDCHAOS_GATE_SIM_SEEDS=0")
			}
			sc := loadPreset(name)
			cfg, skipped, err := simscenario.Config(sc)
			Expect(err).NotTo(HaveOccurred(), "preset %s in the simulator", name)
			if len(skipped) > 0 {
				var what []string
				for _, s := range skipped {
					what = append(what, fmt.Sprint(s))
				}
				AddReportEntry("not_simulated", strings.Join(what, "; "))
			}
			start := time.Now()
			sum, err := sim.Explore(ctx, cfg, 1, uint64(n), sim.ExploreOptions{Workers: runtime.NumCPU()})
			Expect(err).NotTo(HaveOccurred())
			cov.addSim(simKey(name), sum.ProbeSeeds)
			AddReportEntry("sim", fmt.Sprintf("%d seeds, %d failing, %d simulated requests in %s", sum.Seeds, len(sum.Failing), sum.Requests, time.Since(start).Round(time.Millisecond)))
			var bad []string
			for _, r := range sum.Failing {
				c, _ := r.Checks.Get(r.Failed)
				bad = append(bad, fmt.Sprintf("seed %d: %s: %s (replay: pdchaos sim %s --seed %d --trace)", r.Seed, r.Failed, c.Summary, name, r.Seed))
			}
			Expect(bad).To(BeEmpty(), "%s fails in the simulator on the fixed engine", name)
			Expect(sum.Seeds).To(Equal(n), "seeds explored")
		}, SpecTimeout(5*time.Minute))
	}
}

func simKey(name string) string { return "simulated " + name }
