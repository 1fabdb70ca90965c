package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/reports"
)

// recordedRun is a stored failing run (late-registration with
// unknown-room-waiting on, seed 7), shared with reports' tests.
const recordedRun = "../../reports/testdata/late-registration-fail"

// TestReportCommand re-renders a stored run.
func TestReportCommand(t *testing.T) {
	dir := testkit.CopyDir(t, recordedRun)
	code, out := execute(t, "report", dir)
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, f := range []string{reports.ReportFile, reports.JUnitFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if code, out := execute(t, "report", filepath.Join(t.TempDir(), "missing")); code != exitHarness {
		t.Errorf("missing run: exit %d: %s", code, out)
	}
}

// TestBundleCommand: pdchaos bundle writes RUN_DIR.bundle.yaml, and repro
// reads it back as the scenario, seed, target flags and what the run found.
func TestBundleCommand(t *testing.T) {
	dir := testkit.CopyDir(t, recordedRun)
	code, out := execute(t, "bundle", dir)
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	path := dir + ".bundle.yaml"
	if !strings.Contains(out, "pdchaos repro "+path) {
		t.Errorf("no replay line: %s", out)
	}
	rs, err := loadReproSource(path)
	if err != nil {
		t.Fatal(err)
	}
	if rs.scenario.Name != "late-registration" || rs.scenario.Seed != 7 || rs.verdict != check.Fail ||
		rs.failing != "rooms-terminal" || !slices.Equal(rs.scenario.Engine.Regressions, []string{"unknown-room-waiting"}) {
		t.Errorf("bundle read back as %s seed %d verdict %s failing %s regressions %v", rs.scenario.Name, rs.scenario.Seed,
			rs.verdict, rs.failing, rs.scenario.Engine.Regressions)
	}
	tf, err := parseTargetArgs(rs.args)
	if err != nil || tf.kind != "bundled" {
		t.Errorf("target flags %q: %+v %v", rs.args, tf, err)
	}
}

// TestReproSourceArgs: a repro.yaml's recorded target flags come back as
// the same flags, so a replay reaches the same external target.
func TestReproSourceArgs(t *testing.T) {
	dir := testkit.CopyDir(t, recordedRun)
	path := filepath.Join(dir, reports.ReproFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	args := `["--target=external","--router=http://127.0.0.1:8000","--metrics=http://127.0.0.1:1/metrics","--metrics=http://127.0.0.1:2/metrics","--engine-url=http://127.0.0.1:1","--debug-hooks"]`
	if err := os.WriteFile(path, append([]byte(reports.ArgsLine+args+"\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := loadReproSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rs.verdict != check.Fail || rs.failing != "rooms-terminal" {
		t.Errorf("stored verdict %s %s", rs.verdict, rs.failing)
	}
	tf, err := parseTargetArgs(rs.args)
	if err != nil {
		t.Fatal(err)
	}
	if tf.kind != "external" || tf.router != "http://127.0.0.1:8000" || len(tf.metrics) != 2 || !tf.debugHooks {
		t.Errorf("parsed %+v", tf)
	}
	if got := tf.args(); !slices.Equal(got, rs.args) {
		t.Errorf("flags do not round-trip:\n got %q\nwant %q", got, rs.args)
	}
}

// TestReproBadCount is a harness error before anything runs.
func TestReproBadCount(t *testing.T) {
	if code, out := execute(t, "repro", recordedRun, "--count", "0"); code != exitHarness || !strings.Contains(out, "--count") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
