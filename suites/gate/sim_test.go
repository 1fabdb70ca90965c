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

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
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

// defaultSwarmSeeds is how many swarm seeds of each preset the gate
// explores: each seed also draws which fault kinds, cancel policies and
// kills are on (sim.Swarm), so combinations no preset names are tried
// too, as a bug nobody named may need two faults at once.
// PDCHAOS_GATE_SIM_SWARM_SEEDS overrides it (0 skips these specs).
const defaultSwarmSeeds = 60

// seedCount reads a seed count from env (def when unset); a value that is
// no count fails the spec rather than quietly running the default.
func seedCount(env string, def int) (int, error) {
	s := os.Getenv(env)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a seed count (0 skips these simulated specs)", env, s)
	}
	return n, nil
}

// simMode is how simulatedPresets runs every preset: in a dialect other
// than its own (wire), or with swarm-drawn faults.
type simMode struct {
	title string // the specs' container
	wire  contract.Wire
	swarm bool
}

// simModes are the ways the gate runs every preset in the simulator.
var simModes = []simMode{
	{title: "presets pass in the simulator on the fixed engine"},
	{title: "presets pass in the simulator in Mooncake's dialect", wire: contract.WireMooncake},
	{title: "presets pass in the simulator with swarm-drawn faults", swarm: true},
}

// key names preset name's spec in this mode, with the flags that replay
// its seeds; false when the mode does not run it (a preset in the mode's
// dialect already is left to the plain specs).
func (m simMode) key(name string) (key, replay string, ok bool) {
	key = name
	if m.wire != "" {
		if loadPreset(name).Engine.Wire == m.wire {
			return "", "", false
		}
		key, replay = name+" in "+string(m.wire), " --wire "+string(m.wire)
	}
	if m.swarm {
		key, replay = name+" with swarm-drawn faults", replay+" --swarm"
	}
	return key, replay, true
}

// simulatedPresets declares one spec per preset that explores its
// simulated seeds on the fixed engine and records which code probes they
// hit into cov. Declared inside the gate's container, before its code
// probes spec, so that spec counts them. A wire other than "" runs every
// preset in that dialect (those already in it are left to the plain
// specs): real deployments run either, and some branches exist in one
// only (Mooncake's Success status over ZMQ, its unfenced KV writes).
func simulatedPresets(v labels.Vocabulary, cov *probeCoverage, mode simMode) {
	for _, name := range presetNames() {
		key, replay, ok := mode.key(name)
		if !ok {
			continue
		}
		env, def := "PDCHAOS_GATE_SIM_SEEDS", defaultSimSeeds
		if mode.swarm {
			env, def = "PDCHAOS_GATE_SIM_SWARM_SEEDS", defaultSwarmSeeds
		}
		It(key, v.Label(scenarioLabels(name)...), func(ctx SpecContext) {
			n, err := seedCount(env, def)
			Expect(err).NotTo(HaveOccurred())
			if n == 0 {
				Skip(env + "=0")
			}
			sc := loadPreset(name)
			if mode.wire != "" {
				sc.Engine.Wire = mode.wire
			}
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
			sum, err := sim.Explore(ctx, cfg, 1, uint64(n), sim.ExploreOptions{Workers: runtime.NumCPU(), Swarm: mode.swarm})
			Expect(err).NotTo(HaveOccurred())
			cov.addSim(simKey(key), sum.ProbeSeeds)
			AddReportEntry("sim", fmt.Sprintf("%d seeds, %d failing, %d simulated requests in %s", sum.Seeds, len(sum.Failing), sum.Requests, time.Since(start).Round(time.Millisecond)))
			var bad []string
			for _, r := range sum.Failing {
				c, _ := r.Checks.Get(r.Failed)
				bad = append(bad, fmt.Sprintf("seed %d: %s: %s (replay: pdchaos sim %s --seed %d --trace%s)", r.Seed, r.Failed, c.Summary, name, r.Seed, replay))
			}
			Expect(bad).To(BeEmpty(), "%s fails in the simulator on the fixed engine", key)
			Expect(sum.Seeds).To(Equal(n), "seeds explored")
		}, SpecTimeout(5*time.Minute))
	}
}

func simKey(name string) string { return "simulated " + name }

// simulatedRegressions declares one spec per known regression that
// explores the simulated seeds of its catching preset with the regression
// on: the simulator must find it by the catch's checker (what issue 11 asks
// of the simulator, kept true by the gate), and the probes those seeds hit
// are recorded into cov. Some fixed-engine branches are only reached when a
// regression breaks the engine around them (decode's last ACK timeout
// against a dead bootstrap loop, a late write under a request already
// decoding); the fixed seeds reach them every time.
func simulatedRegressions(v labels.Vocabulary, cov *probeCoverage) {
	for _, r := range contract.Catalogue() {
		c := r.Caught
		ls := append(scenarioLabels(c.Scenario), labels.Regression(r.Name))
		It(fmt.Sprintf("%s found by %s (%s)", r.Name, c.Scenario, c.Checker), v.Label(ls...), func(ctx SpecContext) {
			n, err := seedCount("PDCHAOS_GATE_SIM_SEEDS", defaultSimSeeds)
			Expect(err).NotTo(HaveOccurred())
			if n == 0 {
				Skip("PDCHAOS_GATE_SIM_SEEDS=0")
			}
			cfg, _, err := simscenario.Config(loadPreset(c.Scenario, r.Name))
			Expect(err).NotTo(HaveOccurred(), "preset %s with %s in the simulator", c.Scenario, r.Name)
			start := time.Now()
			sum, err := sim.Explore(ctx, cfg, 1, uint64(n), sim.ExploreOptions{Workers: runtime.NumCPU()})
			Expect(err).NotTo(HaveOccurred())
			cov.addSim(simRegressionKey(r.Name), sum.ProbeSeeds)
			var by []uint64
			for _, f := range sum.Failing {
				if got, ok := f.Checks.Get(c.Checker); ok && got.Status == check.Fail {
					by = append(by, f.Seed)
				}
			}
			AddReportEntry("sim", fmt.Sprintf("%d seeds, %d failing, %d by %s, in %s", sum.Seeds, len(sum.Failing), len(by), c.Checker, time.Since(start).Round(time.Millisecond)))
			Expect(by).NotTo(BeEmpty(), "the simulator did not find %s in seeds 1-%d of %s by %s (%d failing by other checkers)",
				r.Name, n, c.Scenario, c.Checker, len(sum.Failing))
		}, SpecTimeout(5*time.Minute))
	}
}

func simRegressionKey(name string) string { return "simulated regression " + name }

// regressionBranch is a simulated exploration that reaches a regression's
// own branch its catching preset does not: the branch runs only in an
// ordering another preset brings about, with the regression on.
type regressionBranch struct {
	regression, preset string
	swarm              bool
	// quiet turns every source of an ABORT off in the preset's clients
	// (cancels, deadlines, kills, abort requests): what reaches prefill
	// first is then the preset's own faults' doing.
	quiet bool
	seeds uint64
	probe string
	why   string
}

// regressionBranches lists them (the one place; each spec fails when its
// seeds stop reaching the probe, naming it).
func regressionBranches() []regressionBranch {
	return []regressionBranch{{
		regression: contract.UnknownRoomWaiting, preset: "room-retries", swarm: true, seeds: 300,
		probe: "prefill/no-transfer-info",
		why: "a retried room's old chunk fails after the new request's metadata came (5 of swarm seeds 1-300, TP 1 and 2): " +
			"the failure clears that rank's TransferInfo, the absent room reads WaitingForInput, and the new request is forwarded without it",
	}, {
		regression: contract.BootstrapThreadDeath, preset: "corrupt-control-messages", quiet: true, seeds: 20,
		probe: "prefill/malformed-kills-loop",
		why: "a corrupted control message reaches the bootstrap loop before any ABORT only where no client cancels, times " +
			"out or dies early; with the preset's own clients the first ABORT kills the loop first",
	}}
}

// simulatedRegressionBranches declares one spec per regressionBranches
// entry: its seeds must hit the probe; their probe seeds are recorded.
func simulatedRegressionBranches(v labels.Vocabulary, cov *probeCoverage) {
	for _, b := range regressionBranches() {
		ls := append(scenarioLabels(b.preset), labels.Regression(b.regression))
		It(fmt.Sprintf("%s reached with %s (%s)", b.probe, b.regression, b.preset), v.Label(ls...), func(ctx SpecContext) {
			if n, err := seedCount("PDCHAOS_GATE_SIM_SEEDS", defaultSimSeeds); err != nil || n == 0 {
				Expect(err).NotTo(HaveOccurred())
				Skip("PDCHAOS_GATE_SIM_SEEDS=0")
			}
			cfg, _, err := simscenario.Config(loadPreset(b.preset, b.regression))
			Expect(err).NotTo(HaveOccurred(), "preset %s with %s in the simulator", b.preset, b.regression)
			if b.quiet {
				cfg.Clients.Quiet()
			}
			start := time.Now()
			sum, err := sim.Explore(ctx, cfg, 1, b.seeds, sim.ExploreOptions{Workers: runtime.NumCPU(), Swarm: b.swarm})
			Expect(err).NotTo(HaveOccurred())
			cov.addSim(simBranchKey(b), sum.ProbeSeeds)
			AddReportEntry("sim", fmt.Sprintf("%d seeds, %s in %d, in %s", sum.Seeds, b.probe, sum.ProbeSeeds[b.probe], time.Since(start).Round(time.Millisecond)))
			Expect(sum.ProbeSeeds[b.probe]).To(BeNumerically(">", 0), "seeds 1-%d of %s (swarm %v, quiet clients %v) with %s no longer reach %s (%s)",
				b.seeds, b.preset, b.swarm, b.quiet, b.regression, b.probe, b.why)
		}, SpecTimeout(5*time.Minute))
	}
}

func simBranchKey(b regressionBranch) string {
	return fmt.Sprintf("simulated branch %s (%s with %s)", b.probe, b.preset, b.regression)
}
