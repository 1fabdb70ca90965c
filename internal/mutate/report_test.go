package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCounts: the summary counts each verdict and credits a catch
// to the first failing checker; a catch by a checker that did not pass
// on the unmutated engine at that seed is flagged as suspect.
func TestReportCounts(t *testing.T) {
	m := func(probe string) Mutant { return Mutant{Probe: probe, File: "engine/core/x.go", Line: 3, Kind: Skip} }
	r := &Report{Seed: 1,
		CoverageFailures: []RunResult{{Preset: "stale-kv-writes", ExitCode: 2, NotPassed: []string{"faults-verified"}}},
		Outcomes: []Outcome{
			{Mutant: m("a"), Verdict: Caught, Checker: "slots-released", Preset: "abort-storm",
				Runs: []RunResult{{Preset: "abort-storm", ExitCode: 1, Failed: []string{"slots-released", "integrity"}}}},
			{Mutant: m("b"), Verdict: Caught, Checker: "faults-verified", Preset: "stale-kv-writes"},
			{Mutant: m("c"), Verdict: Missed, Preset: "abort-storm"},
			{Mutant: m("d"), Verdict: NotReached},
			{Mutant: m("e"), Verdict: NoBuild},
			{Mutant: m("f"), Verdict: StillCaught, Checker: "liveness", Preset: "abort-storm with bootstrap-thread-death"},
		}}
	sum := r.Summary()
	for _, want := range []string{"caught 2, missed 1, not reached 1, inconclusive 0, no build 1", "faults-verified 1;", "slots-released 1;",
		"and 1 break a regression's own branch and leave the regression caught by its checker"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `a` | engine/core/x.go:3 | skip | caught | slots-released (also integrity) | abort-storm |",
		"faults-verified **(not passing unmutated either at this seed: suspect)**",
		"`c` engine/core/x.go:3 skip (missed)",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("mutants.md lacks %q:\n%s", want, md.String())
		}
	}
}

// TestCoverageFromRuns reads probes and the not-passing runs back from
// stored result.json files, and refuses a directory with none.
func TestCoverageFromRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name, "result.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", `{"scenario":"abort-storm","exit_code":0,"probes":{"decode/abort":3,"decode/ack-frees-pages":0}}`)
	write("b", `{"scenario":"stale-kv-writes","exit_code":2,"checks":[{"name":"faults-verified","status":"inconclusive"}],"probes":{"decode/abort":1}}`)
	cov, fails, err := CoverageFromRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cov["abort-storm"]["decode/abort"] != 3 || cov["stale-kv-writes"]["decode/abort"] != 1 {
		t.Errorf("coverage %v", cov)
	}
	if got := reaching(cov, []string{"decode/abort"}); strings.Join(got, ",") != "abort-storm,stale-kv-writes" {
		t.Errorf("reaching decode/abort: %v, want most hits first", got)
	}
	// The busiest preset first, then the one built around the probe
	// (largest share of its hits), then the rest by hits.
	cov3 := map[string]map[string]int64{
		"kill-all-cascade": {"decode/abort-in-transfer": 40, "decode/abort": 900},
		"abort-storm":      {"decode/abort-in-transfer": 30, "decode/abort": 300},
		"stale-kv-writes":  {"decode/abort-in-transfer": 5, "decode/abort": 5},
		"late-reg":         {"decode/abort": 7},
	}
	if got := reaching(cov3, []string{"decode/abort-in-transfer"}); strings.Join(got, ",") != "kill-all-cascade,stale-kv-writes,abort-storm" {
		t.Errorf("reaching decode/abort-in-transfer: %v, want most hits, then largest share, then the rest", got)
	}
	if len(fails) != 1 || fails[0].Preset != "stale-kv-writes" || fails[0].NotPassed[0] != "faults-verified" {
		t.Errorf("coverage failures %+v", fails)
	}
	if _, _, err := CoverageFromRuns(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no result.json") {
		t.Errorf("empty dir: err %v, want no result.json", err)
	}
}

// A mutant at a regression's own branch that no run reached is said to
// be one: the fixed engine never runs it.
func TestReportRegressionBranches(t *testing.T) {
	t.Parallel()
	rep := &Report{Seed: 1, RegressionBranches: map[string]string{"prefill/abort-kills-loop": "bootstrap-thread-death"},
		Outcomes: []Outcome{{Mutant: Mutant{Probe: "prefill/abort-kills-loop", File: "engine/core/prefill.go", Line: 235, Kind: Skip}, Verdict: NotReached},
			{Mutant: Mutant{Probe: "decode/abort", File: "engine/core/decode.go", Line: 227, Kind: Skip}, Verdict: NotReached}}}
	if s := rep.Summary(); !strings.Contains(s, "of the not reached, 1 break a regression's own branch") {
		t.Errorf("summary:\n%s", s)
	}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(a branch of regression bootstrap-thread-death only; not built)") || !strings.Contains(b.String(), "(no coverage run hit it; not built)") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
