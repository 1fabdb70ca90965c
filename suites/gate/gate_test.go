package gate

import (
	"fmt"
	"slices"
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

// gateLabels are the labels a preset gets beyond its fault kinds: the
// components it stresses and whether it is disruptive (kills processes).
type gateLabels struct {
	components []string
	disruptive bool
}

// presetLabels gives each preset its gate labels. Which presets run comes
// from the embedded scenario files, not from this map; a preset missing
// here fails the gate's completeness spec, naming it.
func presetLabels() map[string]gateLabels {
	return map[string]gateLabels{
		"abort-storm":              {[]string{"engine"}, false},
		"kill-all-cascade":         {[]string{"engine", "agents"}, false},
		"abort-overtakes-metadata": {[]string{"control-link", "prefill"}, false},
		"late-registration":        {[]string{"control-link"}, false},
		"paused-transfer-workers":  {[]string{"transfer"}, false},
		"control-link-reset":       {[]string{"control-link"}, false},
		"decode-restart":           {[]string{"decode", "procs"}, true},
		"tp2-abort-storm":          {[]string{"tp"}, false},
		"stale-kv-writes":          {[]string{"kv-pool", "transfer"}, false},
	}
}

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

	Describe("presets pass on the fixed engine", func() {
		It("every embedded preset has gate labels, and every labelled preset exists", func(ctx SpecContext) {
			names := presetNames()
			var missing, stale []string
			for _, n := range names {
				if _, ok := presetLabels()[n]; !ok {
					missing = append(missing, n)
				}
			}
			for n := range presetLabels() {
				if !slices.Contains(names, n) {
					stale = append(stale, n)
				}
			}
			Expect(missing).To(BeEmpty(), "presets in suites/scenarios with no entry in presetLabels")
			Expect(stale).To(BeEmpty(), "presetLabels entries with no preset file")
		}, SpecTimeout(time.Minute))

		for _, name := range presetNames() {
			p := presetLabels()[name]
			ls := append(scenarioLabels(name), labels.Slow)
			for _, c := range p.components {
				ls = append(ls, labels.Component(c))
			}
			if p.disruptive {
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
				dir := specDir()
				// Catches are races: try up to catchTries seeds, first
				// catch wins; misses go to the report so a falling catch
				// rate shows.
				var caught *harness.Result
				var misses []string
				for try := 0; try < catchTries && caught == nil && ctx.Err() == nil; try++ {
					sc := loadPreset(c.scenario, c.regression)
					Expect(sc.Target).NotTo(Equal("procs"), "regressions need the in-process engine")
					res := run(ctx, sc, specSeed(try), target.Bundled{}, dir)
					got, _ := res.Checks.Get(c.check)
					if res.Verdict == check.Fail && got.Status == check.Fail {
						caught = res
						AddReportEntry("caught_on_try", try+1)
						AddReportEntry("first_failure", res.FirstFailure)
						break
					}
					miss := fmt.Sprintf("seed %d: verdict %s, %s %s; failed %v", res.Seed, res.Verdict, c.check, got.Status, res.Checks.Failed())
					misses = append(misses, miss)
					AddReportEntry(fmt.Sprintf("miss_%d", try+1), miss)
				}
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
})
