package mutate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseSim reads what `pdchaos sim --probes` prints: the summary, the
// failing checkers by seeds and the probes hit; no summary is a crash.
func TestParseSim(t *testing.T) {
	t.Parallel()
	out := []byte(`seed 4: FAIL rooms-terminal: 2 rooms still held after the drain
abort-storm: 10 seeds, 3 failing, 129ms wall (31.0 seeds/s, 620 simulated requests, 4811 simulated requests/s, 2 workers)
  liveness failed in 1 seeds
  rooms-terminal failed in 3 seeds
  slots-released failed in 3 seeds
replay: pdchaos sim abort-storm --seed 4 --trace
code probes: 2 of 121 hit
    decode/abort                                         10 seeds
  - decode/abort-after-finish                            0 seeds
    prefill/local-abort                                  7 seeds
`)
	s, ok := parseSim(out)
	if !ok || s.seeds != 10 || s.failing != 3 {
		t.Fatalf("summary: ok %v, %d seeds, %d failing; want 10 and 3", ok, s.seeds, s.failing)
	}
	if got := s.checkers(); !slices.Equal(got, []string{"rooms-terminal", "slots-released", "liveness"}) {
		t.Errorf("checkers %v; want most seeds first, ties by name", got)
	}
	if s.probes["decode/abort"] != 10 || s.probes["prefill/local-abort"] != 7 || len(s.probes) != 2 {
		t.Errorf("probes %v; want the two hit ones only", s.probes)
	}
	if _, ok := parseSim([]byte("panic: runtime error: index out of range\n")); ok {
		t.Error("a panic's output parsed as a summary")
	}
}

func TestSimulated(t *testing.T) {
	t.Parallel()
	if !Simulated(Mutant{File: "engine/core/prefill.go"}) || Simulated(Mutant{File: "engine/prefill.go"}) {
		t.Error("Simulated: want engine/core files only")
	}
}

// The simulator's screen covers each preset in both dialects, as the gate
// explores them: Mooncake-only branches (its Success status over ZMQ, the
// restart fence) are reached only there.
func TestSimPresetsBothDialects(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "suites", "scenarios")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"abort-storm.yaml":     "name: abort-storm\nengine:\n  tp: 2\n",
		"prefill-lost-mc.yaml": "name: prefill-lost-mc\nengine:\n  wire: mooncake\n",
		"quoted-mooncake.yaml": "name: quoted-mooncake\nengine:\n  wire: \"mooncake\"\n",
		"nixl-explicitly.yaml": "name: nixl-explicitly\nengine:\n  wire: nixl\n",
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sim := Options{Root: root, Work: t.TempDir(), SimSeeds: 10}
	if err := sim.defaults(); err != nil {
		t.Fatal(err)
	}
	want := []string{"abort-storm", "abort-storm@mooncake", "nixl-explicitly", "nixl-explicitly@mooncake", "prefill-lost-mc", "quoted-mooncake"}
	if !slices.Equal(sim.Presets, want) {
		t.Errorf("simulated presets %v; want %v", sim.Presets, want)
	}
	live := Options{Root: root, Work: t.TempDir()}
	if err := live.defaults(); err != nil {
		t.Fatal(err)
	}
	if len(live.Presets) != 4 {
		t.Errorf("live presets %v; want the four files as they are (the gate runs them live in their own dialect)", live.Presets)
	}
	for _, bad := range []string{"abort-storm@", "@mooncake", "abort-storm@mooncak"} {
		o := Options{Root: root, Work: t.TempDir(), Presets: []string{bad}}
		if err := o.defaults(); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("preset %q: error %v; want one naming it", bad, err)
		}
	}
	name, args, err := presetArgs("kv-link-faults@mooncake")
	if err != nil || name != "kv-link-faults" || !slices.Equal(args, []string{"--wire", "mooncake"}) {
		t.Errorf("presetArgs: %q %v %v; want kv-link-faults with --wire mooncake", name, args, err)
	}
}

// A mutant of a regression's own branch is caught when the regression's
// catching run crashes or no longer fails the checker the gate requires;
// still caught when that checker still fails; not reached when the branch
// did not run.
func TestRegressionVerdict(t *testing.T) {
	t.Parallel()
	rc := RegressionCatch{Regression: "bootstrap-thread-death", Preset: "abort-storm", Checker: "liveness"}
	for _, c := range []struct {
		name    string
		run     RunResult
		verdict Verdict
		checker string
	}{
		{"still caught", RunResult{ExitCode: 1, Failed: []string{"rooms-terminal", "liveness"}, Hits: 3}, StillCaught, "liveness"},
		{"lost", RunResult{ExitCode: 1, Failed: []string{"rooms-terminal"}, Hits: 3}, Caught, RegressionLost},
		{"passes", RunResult{ExitCode: 0, Hits: 3}, Caught, RegressionLost},
		{"crash", RunResult{ExitCode: 2, Crashed: true}, Caught, "crash"},
		{"branch not run", RunResult{ExitCode: 1, Failed: []string{"liveness"}}, NotReached, ""},
		{"run proved nothing", RunResult{ExitCode: 3, Hits: 3}, Inconclusive, ""},
	} {
		if v, ch := regressionVerdict(c.run, rc); v != c.verdict || ch != c.checker {
			t.Errorf("%s: %s %q; want %s %q", c.name, v, ch, c.verdict, c.checker)
		}
	}
}
