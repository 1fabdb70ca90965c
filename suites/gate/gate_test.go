package gate

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/suites/labels"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// Spec timeouts: a run is its scenario's length (10-12 s) plus drain,
// probes and shutdown (worst case about 45 s when the engine is wedged).
const (
	passTimeout  = 3 * time.Minute
	catchTimeout = 5 * time.Minute // up to catchTries runs
	grace        = 45 * time.Second
	catchTries   = 3
)

// presetNames lists every embedded preset scenario.
func presetNames() []string {
	names, err := harness.PresetNames(scenarios.FS)
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("gate: no preset scenarios embedded: %v", err)) // tree construction: fail the suite
	}
	return names
}

var _ = Describe("pre-release gate", Serial, func() {
	v := labels.New()
	// Every run's code probe hits, for the last spec.
	cov := newProbeCoverage()

	Describe("presets pass on the fixed engine", func() {

		for _, name := range presetNames() {
			p := labels.Presets()[name] // completeness: suites/labels' TestEveryPresetHasLabels
			ls := append(scenarioLabels(name), labels.Slow)
			for _, c := range p.Components {
				ls = append(ls, labels.Component(c))
			}
			if p.Disruptive {
				ls = append(ls, labels.Disruptive)
			}
			It(name, v.Label(ls...), func(ctx SpecContext) {
				dir := specDir()
				sc := loadPreset(name)
				var bin string
				if sc.Target == "procs" {
					bin = buildPdchaos(ctx)
				}
				res := run(ctx, sc, specSeed(0), source(sc, bin, dir), dir)
				cov.add(presetKey(name), res)
				if res.Verdict == check.Inconclusive && len(res.Checks.Failed()) == 0 && !res.Interrupted && ctx.Err() == nil {
					// Inconclusive is no verdict (a fault met nothing to act
					// on, a load floor not reached): one more seed, never
					// for a failure. The first run stays in the report.
					var why []string
					for _, c := range res.Checks {
						if c.Status == check.Inconclusive {
							why = append(why, c.Name+": "+c.Summary)
						}
					}
					AddReportEntry("inconclusive_first_seed", fmt.Sprintf("seed %d: %s (run %s)", res.Seed, strings.Join(why, "; "), res.RunDir))
					GinkgoWriter.Printf("  inconclusive on seed %d (%s): one more seed\n", res.Seed, strings.Join(why, "; "))
					sc = loadPreset(name)
					res = run(ctx, sc, specSeed(1), source(sc, bin, dir), dir)
					cov.add(presetKey(name), res)
				}
				reportFigures(res)
				Expect(res.Interrupted).To(BeFalse(), "run interrupted (spec timeout?)")
				var bad []string
				for _, c := range res.Checks {
					if c.Status != check.Pass && c.Status != check.Skip {
						bad = append(bad, fmt.Sprintf("%s: %s: %s", c.Name, c.Status, c.Summary))
					}
				}
				Expect(bad).To(BeEmpty(), "checks not pass/skip (run %s)", res.RunDir)
				Expect(res.Verdict).To(Equal(check.Pass), "verdict (run %s)%s", res.RunDir, checksLine(res.Checks))
			}, SpecTimeout(passTimeout), GracePeriod(grace))
		}
	})

	Describe("regressions are caught", func() {
		// The catching scenario and checker of every regression come from
		// the catalogue (contract.Catalogue()); the catalogue's own test
		// checks that each names a preset and a checker.
		for _, r := range contract.Catalogue() {
			c := struct{ regression, scenario, check string }{r.Name, r.Caught.Scenario, r.Caught.Checker}
			ls := append(scenarioLabels(c.scenario), labels.Slow, labels.Regression(c.regression))
			text := fmt.Sprintf("%s by %s (%s)", c.regression, c.scenario, c.check)
			It(text, v.Label(ls...), func(ctx SpecContext) {
				caught, misses := tryCatch(ctx, c.regression, c.scenario, c.check, regressionKey(c.regression), cov)
				Expect(caught).NotTo(BeNil(), "%s not caught by %s (%s) in %d seeds:\n%v",
					c.regression, c.scenario, c.check, catchTries, misses)
				reportFigures(caught)
				if c.check == contract.CheckRoomsTerminal {
					rt, _ := caught.Checks.Get(c.check)
					Expect(rt.Stuck).NotTo(BeEmpty(), "rooms-terminal failed without naming rooms")
				}
			}, SpecTimeout(catchTimeout), GracePeriod(grace))
		}
	})

	Describe("extra catches (shared/GATE.md's matrix beyond the catalogue)", func() {
		// contract.Catalogue()'s Also: each further preset that catches a
		// regression. One marked Unreliable runs and reports, not asserts.
		for _, r := range contract.Catalogue() {
			for _, a := range r.Also {
				c := struct{ regression, scenario, check, unreliable string }{r.Name, a.Scenario, a.Checker, a.Unreliable}
				ls := append(scenarioLabels(c.scenario), labels.Slow, labels.Regression(c.regression))
				It(fmt.Sprintf("%s by %s (%s)", c.regression, c.scenario, c.check), v.Label(ls...), func(ctx SpecContext) {
					caught, misses := tryCatch(ctx, c.regression, c.scenario, c.check, "extra:"+c.regression+"@"+c.scenario, cov)
					if c.unreliable != "" {
						AddReportEntry("unreliable", c.unreliable)
						if caught == nil {
							Skip(fmt.Sprintf("not caught in %d seeds, as known (%s): %v", catchTries, c.unreliable, misses))
						}
						return
					}
					Expect(caught).NotTo(BeNil(), "%s not caught by %s (%s) in %d seeds:\n%v",
						c.regression, c.scenario, c.check, catchTries, misses)
					reportFigures(caught)
				}, SpecTimeout(catchTimeout), GracePeriod(grace))
			}
		}
	})

	for _, m := range simModes {
		Describe(m.title, func() {
			simulatedPresets(v, cov, m)
		})
	}

	Describe("the simulator finds every regression", func() {
		simulatedRegressions(v, cov)
	})

	Describe("the simulator reaches regressions' own branches other presets bring about", func() {
		simulatedRegressionBranches(v, cov)
	})

	Describe("hostile peers", func() {
		hostilePeers(v, cov)
	})

	// Last, after every run above (Ginkgo keeps the order of specs inside
	// one top-level container unless -ginkgo.randomize-all): every code
	// probe must be hit by some gate run, or be listed in
	// unreachableInGate with why.
	Describe("code probes", func() {
		It("the probes listed as unreachable in the gate exist, each with a reason", func(ctx SpecContext) {
			Expect(unknownProbes(unreachableInGate())).To(BeEmpty(), "unreachableInGate names no probe or gives no reason (pdchaos probes lists them)")
		}, SpecTimeout(time.Minute))

		It("every code probe is hit by some gate run", func(ctx SpecContext) {
			var want []string
			for _, n := range presetNames() {
				want = append(want, presetKey(n))
			}
			for _, r := range contract.Catalogue() {
				want = append(want, regressionKey(r.Name))
			}
			if n, err := seedCount("PDCHAOS_GATE_SIM_SEEDS", defaultSimSeeds); err == nil && n > 0 {
				// Every mode's specs: a probe only one mode reaches (Mooncake's
				// Success over ZMQ, an ordering only swarm draws bring about)
				// is judged only when that mode ran.
				for _, m := range simModes {
					for _, p := range presetNames() {
						if key, _, ok := m.key(p); ok {
							want = append(want, simKey(key))
						}
					}
				}
				for _, r := range contract.Catalogue() {
					want = append(want, simRegressionKey(r.Name))
				}
				for _, b := range regressionBranches() {
					want = append(want, simBranchKey(b))
				}
			}
			want = append(want, hostileKeys()...)
			if missing := cov.missing(want); len(missing) > 0 {
				Skip(fmt.Sprintf("probe coverage is judged on a whole gate only; no run recorded for %s (filtered, or run out of order)", strings.Join(missing, ", ")))
			}
			results := cov.results()
			unhit, nowHit, simOnly := judgeProbes(results, cov.simHits(), cov.liveHits(), unreachableInGate())
			if len(simOnly) > 0 {
				// The simulator runs engine/core as the live engine does: a
				// branch it reached is a branch the gate executed, though no
				// live run's interleaving did this time.
				AddReportEntry("probes_hit_only_in_the_simulator", strings.Join(simOnly, ", "))
			}
			AddReportEntry("probe_runs", len(results))
			AddReportEntry("probes_unhit_listed", len(unreachableInGate())-len(nowHit))
			if len(nowHit) > 0 {
				// Not a failure: races are hit in some seeds. Drop a probe
				// from the list once presets hit it every time.
				AddReportEntry("probes_listed_unreachable_but_hit", strings.Join(nowHit, ", "))
			}
			Expect(unhit).To(BeEmpty(), "code probes no gate run hit (add a preset that reaches them, or list them in unreachableInGate with why):\n  %s",
				strings.Join(unhit, "\n  "))
		}, SpecTimeout(time.Minute))
	})
})

// tryCatch runs scenario with regression on, up to catchTries seeds, and
// returns the first run whose verdict is fail with checker failing, or nil
// and one line per miss. Catches are races: first catch wins, and the
// misses go to the report so a falling catch rate shows. With cov set, each
// run's probe hits are recorded under key.
func tryCatch(ctx SpecContext, regression, scenario, checker, key string, cov *probeCoverage) (*harness.Result, []string) {
	dir := specDir()
	var misses []string
	for try := 0; try < catchTries && ctx.Err() == nil; try++ {
		sc := loadPreset(scenario, regression)
		Expect(sc.Target).NotTo(Equal("procs"), "regressions need the in-process engine")
		res := run(ctx, sc, specSeed(try), target.Bundled{}, dir)
		if cov != nil {
			cov.add(key, res)
		}
		got, _ := res.Checks.Get(checker)
		if res.Verdict == check.Fail && got.Status == check.Fail {
			AddReportEntry("caught_on_try", try+1)
			AddReportEntry("first_failure", res.FirstFailure)
			return res, misses
		}
		miss := fmt.Sprintf("seed %d: verdict %s, %s %s; failed %v", res.Seed, res.Verdict, checker, got.Status, res.Checks.Failed())
		misses = append(misses, miss)
		AddReportEntry(fmt.Sprintf("miss_%d", try+1), miss)
	}
	return nil, misses
}
