package gate

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/suites/labels"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// resultsRoot is where run directories go: $PDCHAOS_RESULTS_DIR (make gate
// sets it to RESULTS_DIR), else a pdchaos-gate folder in the temp dir.
func resultsRoot() string {
	if d := os.Getenv("PDCHAOS_RESULTS_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "pdchaos-gate")
}

// specDir makes the current spec's results folder. It is removed when the
// spec passes and kept, with its path in the report, when it fails.
func specDir() string {
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, CurrentSpecReport().LeafNodeText)
	dir := filepath.Join(resultsRoot(), "gate", fmt.Sprintf("%s-%d", slug, GinkgoRandomSeed()))
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	DeferCleanup(func() error {
		if CurrentSpecReport().Failed() {
			return nil
		}
		return os.RemoveAll(dir)
	})
	DeferOnFailure(func() {
		AddReportEntry("run_dir", dir)
		GinkgoWriter.Printf("kept run directories under %s\n", dir)
	})
	return dir
}

// specSeed is the run seed of a try: GinkgoRandomSeed, the spec text and
// the try number, hashed, so `-ginkgo.seed` reproduces a whole gate run.
func specSeed(try int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d", GinkgoRandomSeed(), CurrentSpecReport().FullText(), try)
	return max(h.Sum64()>>1, 1) // 0 would mean "draw a fresh seed"
}

// loadPreset loads a preset scenario at its gate length, with exactly the
// given regressions switched on (none: the fixed engine).
func loadPreset(name string, regressions ...string) *harness.Scenario {
	sc, err := harness.LoadScenario(name, scenarios.FS)
	Expect(err).NotTo(HaveOccurred())
	sc.Engine.Regressions = regressions
	return sc
}

// source is the target a preset asks for: procs needs the pdchaos binary
// (bin) and sends the roles' stderr to engine.log in dir.
func source(sc *harness.Scenario, bin, dir string) target.Source {
	if sc.Target != "procs" {
		return target.Bundled{}
	}
	Expect(bin).NotTo(BeEmpty(), "scenario %s runs on procs but no pdchaos binary was built", sc.Name)
	f, err := os.Create(filepath.Join(dir, "engine.log"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	return target.ProcsSource{Bin: bin, Log: f}
}

// buildPdchaos builds the CLI for the procs target, as harness's TestMain
// does, into a folder removed after the spec.
func buildPdchaos(ctx context.Context) string {
	bin, err := testkit.BuildCLI(ctx, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	return bin
}

// run runs sc once; a harness error fails the spec.
func run(ctx context.Context, sc *harness.Scenario, seed uint64, src target.Source, dir string) *harness.Result {
	GinkgoWriter.Printf("run %s seed %d on %s, regressions %v\n", sc.Name, seed, src.Kind(), sc.Engine.Regressions)
	res, err := harness.Run(ctx, harness.RunOptions{Scenario: sc, Seed: seed, Source: src, ResultsDir: dir})
	Expect(err).NotTo(HaveOccurred(), "run %s seed %d", sc.Name, seed)
	GinkgoWriter.Printf("  verdict %s in %v: %s\n", res.Verdict, res.Duration, res.FirstFailure)
	return res
}

// reportFigures puts a run's key figures in the report (JUnit properties).
func reportFigures(res *harness.Result) {
	co, _ := res.Checks.Get(contract.CheckClientOutcomes)
	lf, _ := res.Checks.Get(contract.CheckLoadFloor)
	rt, _ := res.Checks.Get(contract.CheckRoomsTerminal)
	AddReportEntry("seed", res.Seed)
	AddReportEntry("verdict", string(res.Verdict))
	AddReportEntry("requests", co.Evidence["requests"])
	AddReportEntry("cancels", lf.Evidence["cancels"])
	AddReportEntry("rooms_checked", rt.Evidence["rooms_checked"])
	AddReportEntry("wedges", len(res.Wedges))
	AddReportEntry("run_seconds", res.Duration.Seconds())
	repro := fmt.Sprintf("pdchaos run %s --seed %d --target %s", res.Scenario, res.Seed, res.Target)
	for _, r := range res.Regressions {
		repro += " --regression " + r
	}
	AddReportEntry("repro", repro)
}

// checksLine is one line per check for failure messages.
func checksLine(cs check.Checks) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s: %s: %s", c.Name, c.Status, c.Summary)
	}
	return b.String()
}

// scenarioLabels labels a preset by the faults it injects: its scenario
// fault kinds plus the agents' own cancels and kill-all rounds.
func scenarioLabels(name string) []string {
	sc, err := harness.LoadScenario(name, scenarios.FS)
	if err != nil {
		panic(fmt.Sprintf("gate: preset %s: %v", name, err)) // tree construction: fail the suite
	}
	var out []string
	add := func(l string) {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for _, f := range sc.Faults {
		add(labels.Fault(f.Kind))
	}
	if o, err := sc.AgentOptions(); err == nil {
		if o.CancelQueuedRate > 0 || o.CancelDecodeRate > 0 {
			add(labels.Fault("cancel"))
		}
		if len(o.KillAllAt) > 0 {
			add(labels.Fault("kill-all"))
		}
	}
	return out
}
