package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/harness"
)

// pdchaos sim: a regression's seed fails with its checker and a replay
// command; one seed replays with its trace; a shrink writes a scenario
// file that parses; bad input is a harness error naming the problem.
func TestSimCommand(t *testing.T) {
	// The shrunk repros are small scenario files: quick to simulate.
	desync := "../../sim/scenario/testdata/min-rank-desync.yaml"
	leak := "../../sim/scenario/testdata/min-decode-abort-leak.yaml"
	code, out := execute(t, "sim", desync, "--seeds", "1..2", "--workers", "2", "--checker", "liveness")
	if code != exitViolation || !strings.Contains(out, "seed 1: FAIL liveness") || !strings.Contains(out, "replay: pdchaos sim "+desync+" --seed 1 --trace") {
		t.Fatalf("rank-desync: exit %d, output:\n%s", code, out)
	}
	code, out = execute(t, "sim", leak, "--seed", "2", "--trace")
	if !strings.Contains(out, "abort-storm seed 2:") || !strings.Contains(out, "recv metadata") || !strings.Contains(out, "liveness") {
		t.Fatalf("replay: exit %d, output lacks the trace or verdict:\n%.2000s", code, out)
	}
	// --wire runs a preset in the other dialect, and a failing seed's
	// replay command keeps it.
	// (The repro was shrunk in its own dialect: in Mooncake's, about one
	// seed in five fails, so look through enough of them to find one.)
	code, out = execute(t, "sim", desync, "--seeds", "1..100", "--first", "--wire", "mooncake", "--checker", "liveness")
	if code != exitViolation || !strings.Contains(out, " --trace --wire mooncake") {
		t.Fatalf("--wire mooncake: exit %d, output:\n%s", code, out)
	}
	min := filepath.Join(t.TempDir(), "min.yaml")
	code, out = execute(t, "sim", leak, "--seed", "1", "--shrink", min)
	if code != exitPass || !strings.Contains(out, "after:") {
		t.Fatalf("shrink: exit %d, output:\n%s", code, out)
	}
	b, err := os.ReadFile(min)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := harness.ParseScenario(min, b); err != nil {
		t.Fatalf("shrunk file: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "abort-storm", "--seeds", "9..3"}, "TO >= FROM"},
		{[]string{"sim", "abort-storm", "--regression", "nope", "--seeds", "1"}, `unknown regression "nope"`},
		{[]string{"sim", "abort-storm", "--checker", "nope"}, "not a checker"},
		{[]string{"sim", "abort-storm", "--wire", "rdma"}, `--wire: unknown wire dialect "rdma" (valid: nixl, mooncake)`},
	} {
		if code, out := execute(t, tc.args...); code != exitHarness || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %q; want a harness error mentioning %q", tc.args, code, out, tc.want)
		}
	}
}
