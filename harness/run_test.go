package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// pdchaosBin is the CLI built once for process-mode tests ("" in -short).
var pdchaosBin string

func TestMain(m *testing.M) { os.Exit(testkit.RunWithCLI(m, &pdchaosBin)) }

// preset loads a preset scenario, shortened for tests.
func preset(t *testing.T, name string, regressions ...string) *Scenario {
	t.Helper()
	sc, err := LoadScenario(name, scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 8 * time.Second
	sc.Engine.Regressions = regressions
	return sc
}

// TestRunAbortStormPasses is must-show 1: the fixed engine passes, every
// checker with non-zero evidence, and the run directory holds the results.
// Not parallel: no-leaks counts every goroutine of the process, so this run
// must be alone (parallel tests wait until sequential ones finish).
func TestRunAbortStormPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for 8s")
	}
	res, err := Run(t.Context(), RunOptions{Scenario: preset(t, "abort-storm"), Seed: 11, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != check.Pass || res.ExitCode != ExitPass {
		t.Fatalf("verdict %s: %v", res.Verdict, res.Err())
	}
	for _, c := range res.Checks {
		if c.Status != check.Pass {
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Summary)
		}
	}
	for check, key := range map[string]string{contract.CheckRoomsTerminal: "rooms_checked", contract.CheckSlotsReleased: "gauges_checked",
		contract.CheckLiveness: "probes_ok", contract.CheckClientOutcomes: "requests", contract.CheckIntegrity: "completed_checked",
		contract.CheckFaultsVerified: "client_faults_verified", contract.CheckLoadFloor: "cancels", contract.CheckNoLeaks: "checked",
		contract.CheckTimeoutsExplained: "states_checked"} {
		if c, _ := res.Checks.Get(check); c.Evidence[key] == 0 {
			t.Errorf("%s: evidence %s is 0 (%v)", check, key, c.Evidence)
		}
	}
	for _, f := range []string{"result.json", "events.jsonl", "repro.yaml", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(res.RunDir, f)); err != nil {
			t.Error(err)
		}
	}
	back, err := ReadResult(res.RunDir)
	if err != nil || back.Verdict != check.Pass || back.Seed != 11 {
		t.Fatalf("result.json: %+v %v", back, err)
	}
	// The stored log judges the same offline.
	evs, err := record.ReadEventsFile(filepath.Join(res.RunDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, v := JudgeLog(evs, res.scenarioChecks(t)); v != check.Pass {
		t.Fatalf("offline verdict %s", v)
	}
	// Every role's code probes are recorded at the end: an event per role,
	// and in result.json every probe with its hits; an abort storm aborts.
	// The log carries the resolved engine config timeouts-explained judges by.
	if e := check.NewView(evs).Run.Engine; e == nil || e.BootstrapTimeout == 0 || e.CheckInterval == 0 {
		t.Errorf("the run event records engine config %+v, want the resolved one", e)
	}
	if v := check.NewView(evs); len(v.CodeProbes) != 3 {
		t.Errorf("code-probes events from %d roles, want prefill, decode and router: %v", len(v.CodeProbes), v.CodeProbes)
	}
	if len(back.Probes) != contract.NumProbes || back.Probes["decode/abort"] == 0 {
		t.Errorf("result.json probes: %d of %d, decode/abort %d", len(back.Probes), contract.NumProbes, back.Probes["decode/abort"])
	}
	if unhit := UnhitProbes(back); len(unhit) == 0 || len(unhit) == contract.NumProbes {
		t.Errorf("one abort storm leaves %d of %d probes unhit", len(unhit), contract.NumProbes)
	}
}

// TestUnhitProbes: a probe is hit when any run hit it; nil results and runs
// without probes count for nothing.
func TestUnhitProbes(t *testing.T) {
	var all []contract.Probe // the probes to reach: Never ones are asserted, never listed
	for _, p := range contract.Probes() {
		if !p.Never {
			all = append(all, p)
		}
	}
	a := &Result{Probes: map[string]int64{all[0].Name: 1, all[1].Name: 0}}
	b := &Result{Probes: map[string]int64{all[1].Name: 4}}
	got := UnhitProbes(a, nil, b, &Result{})
	if len(got) != len(all)-2 || got[0].Name != all[2].Name {
		t.Errorf("UnhitProbes left %d (first %s), want all but the first two", len(got), got[0].Name)
	}
}

func (r *Result) scenarioChecks(t *testing.T) CheckSpec {
	t.Helper()
	sc, err := LoadScenario(r.Scenario, scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	return sc.Checks
}

// TestRunCatchesRegressions: with each regression on, its catching scenario
// (from the catalogue) fails with the catalogue's checker; where the wedge
// is a gauge the watchdog flags it during the run, before the drain
// deadline ends.
// Runs are not parallel: no-leaks compares goroutines before and after a
// run in this process, so two runs at once would see each other's.
func TestRunCatchesRegressions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario per regression")
	}
	for _, r := range contract.Catalogue() {
		tc := struct {
			regression, scenario, check string
			wedge                       bool
		}{r.Name, r.Caught.Scenario, r.Caught.Checker, r.Caught.Wedge}
		t.Run(tc.regression, func(t *testing.T) {
			// Catches are races: try a few seeds and require one. The
			// seeds that missed are logged, so a falling catch rate shows.
			var res *Result
			var c check.CheckResult
			for _, seed := range []uint64{7, 8, 9} {
				sc := preset(t, tc.scenario, tc.regression)
				r, err := Run(t.Context(), RunOptions{Scenario: sc, Seed: seed, ResultsDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := r.Checks.Get(tc.check)
				if r.Verdict == check.Fail && got.Status == check.Fail {
					res, c = r, got
					break
				}
				t.Logf("seed %d missed: verdict %s, %s %s; failed: %v", seed, r.Verdict, tc.check, got.Status, r.Checks.Failed())
			}
			if res == nil {
				t.Fatalf("%s not caught by %s (%s) in any seed", tc.regression, tc.scenario, tc.check)
			}
			if tc.check == contract.CheckRoomsTerminal && len(c.Stuck) == 0 {
				t.Fatalf("rooms-terminal failed without naming rooms")
			}
			t.Logf("%s: %s", tc.regression, res.FirstFailure)
			// A wedged gauge must be flagged while the run goes on; a
			// stuck room without a stuck gauge has no gauge to flag.
			if sr, _ := res.Checks.Get(contract.CheckSlotsReleased); !tc.wedge || sr.Status != check.Fail {
				return
			}
			if len(res.Wedges) == 0 {
				t.Fatalf("watchdog flagged no wedge")
			}
			if w := res.Wedges[0]; w.At >= res.Duration {
				t.Fatalf("wedge flagged at %v, after the run (%v)", w.At, res.Duration)
			}
		})
	}
}

// TestRunInterrupted is must-show 5: cancel during the fault phase; Run
// returns within seconds, heals the paused gates and writes partial results.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	sc := preset(t, "paused-transfer-workers")
	sc.Duration = 30 * time.Second
	src := &keepSource{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelled time.Time
	results := t.TempDir()
	var midRun []byte // repro.yaml as it was before the run ended
	res, err := Run(ctx, RunOptions{Scenario: sc, Seed: 3, ResultsDir: results, Source: src,
		Progress: func(p Progress) {
			if p.Faults > 0 && cancelled.IsZero() {
				if m, _ := filepath.Glob(filepath.Join(results, "*", "repro.yaml")); len(m) == 1 {
					midRun, _ = os.ReadFile(m[0])
				}
				cancelled = time.Now()
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.IsZero() {
		t.Fatal("no fault was ever active")
	}
	if took := time.Since(cancelled); took > 10*time.Second {
		t.Fatalf("run took %v to stop after cancel", took)
	}
	if !res.Interrupted || res.Verdict != check.Inconclusive {
		t.Fatalf("interrupted %v verdict %s", res.Interrupted, res.Verdict)
	}
	if _, err := ReadResult(res.RunDir); err != nil {
		t.Fatal(err)
	}
	// repro.yaml is written when the run starts (a killed run keeps it) and
	// completed at the end.
	if !strings.Contains(string(midRun), "# status: running") || !strings.Contains(string(midRun), "seed: 3") {
		t.Fatalf("repro.yaml during the run:\n%s", midRun)
	}
	if b, err := os.ReadFile(filepath.Join(res.RunDir, "repro.yaml")); err != nil || !strings.Contains(string(b), "# status: finished") {
		t.Fatalf("repro.yaml after the run (%v):\n%s", err, b)
	}
	states, err := src.c.Prefill.Hooks().State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Paused {
			t.Fatalf("gate %s left paused", s.HookSpec)
		}
	}
	if len(res.Faults) == 0 || !res.Faults[0].Applied || res.Faults[0].End == 0 {
		t.Fatalf("fault window not recorded as healed: %+v", res.Faults)
	}
}

// keepSource is Bundled that remembers the cluster for inspection.
type keepSource struct {
	target.Bundled
	c *engine.Cluster
}

func (k *keepSource) Open(ctx context.Context, cfg contract.EngineConfig) (target.Target, error) {
	c, err := engine.StartCluster(ctx, cfg, nil)
	k.c = c
	return c, err
}
