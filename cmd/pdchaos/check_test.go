package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
)

// recorded is a checker test log from harness/check/testdata.
func recorded(name string) string {
	return filepath.Join("..", "..", "harness", "check", "testdata", name)
}

// storedResult is result.json as Run would have written it for log.
func storedResult(t *testing.T, log string) *harness.Result {
	t.Helper()
	evs, err := record.ReadEventsFile(recorded(log))
	if err != nil {
		t.Fatal(err)
	}
	res := &harness.Result{Scenario: "testdata", Seed: 42}
	res.Checks, res.Verdict = harness.JudgeLog(evs, harness.CheckSpec{})
	return res
}

// runDir makes a run directory: events.jsonl copied from a recorded log (or
// given as text), result.json from stored (nil: none), repro.yaml (empty: none).
func runDir(t *testing.T, log, events string, stored *harness.Result, repro string) string {
	t.Helper()
	dir := t.TempDir()
	if log != "" {
		b, err := os.ReadFile(recorded(log))
		if err != nil {
			t.Fatal(err)
		}
		events = string(b)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("events.jsonl", events)
	if stored != nil {
		b, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		write("result.json", string(b))
	}
	if repro != "" {
		write("repro.yaml", repro)
	}
	return dir
}

// TestCheckRejudgesStoredRuns: `pdchaos check` judges each stored log again
// and prints both verdicts and every checker whose status moved.
func TestCheckRejudgesStoredRuns(t *testing.T) {
	good := storedResult(t, "good.jsonl")
	if good.Verdict != check.Pass {
		t.Fatalf("good.jsonl judged %s", good.Verdict)
	}
	// A run stored as passing whose log today's rooms-terminal fails: the
	// verdict an older, weaker checker would have written.
	drifted := runDir(t, "bad-rooms-terminal.jsonl", "", good, "")
	same := runDir(t, "good.jsonl", "", good, "")
	floor := runDir(t, "good.jsonl", "", good, "# pdchaos repro\nname: testdata\nduration: 5s\nchecks: {min_requests: 1000}\n")
	for _, tc := range []struct {
		name string
		dirs []string
		code int
		want []string
	}{
		{"same verdict", []string{same}, exitPass, []string{same + ": stored PASS, now PASS", "no checker changed", "no repro.yaml"}},
		{"verdict changed", []string{drifted}, exitViolation, []string{drifted + ": stored PASS, now FAIL",
			contract.CheckRoomsTerminal + ": pass -> fail (1 rooms still held"}},
		{"scenario load floor from repro.yaml", []string{floor}, exitInconclusive, []string{floor + ": stored PASS, now INCONCLUSIVE",
			contract.CheckLoadFloor + ": pass -> inconclusive (load floor not reached: 30 requests (want 1000)"}},
		{"several runs, one fails", []string{same, drifted}, exitViolation, []string{same + ": stored PASS, now PASS",
			drifted + ": stored PASS, now FAIL", "1 of 2 runs fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := execute(t, append([]string{"check"}, tc.dirs...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestCheckBadInput: a missing directory or an unreadable log is a harness
// error (exit 3) naming the file and, for a malformed line, the line.
func TestCheckBadInput(t *testing.T) {
	good := storedResult(t, "good.jsonl")
	missing := filepath.Join(t.TempDir(), "no-such-run")
	malformed := runDir(t, "", "{\"t\":1,\"type\":\"run\",\"run\":{\"scenario\":\"x\"}}\n{\"t\":2,\"type\":\n", good, "")
	empty := runDir(t, "", "", good, "")
	noLog := t.TempDir()
	badResult := runDir(t, "good.jsonl", "", nil, "")
	if err := os.WriteFile(filepath.Join(badResult, "result.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	badRepro := runDir(t, "good.jsonl", "", good, "name: x\nduration: 5s\nchekcs: {}\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no run directory", []string{"check"}, []string{"arg"}},
		{"missing directory", []string{"check", missing}, []string{missing}},
		{"malformed line", []string{"check", malformed}, []string{filepath.Join(malformed, "events.jsonl"), "line 2"}},
		{"empty log", []string{"check", empty}, []string{filepath.Join(empty, "events.jsonl"), "no event recorded"}},
		{"no events.jsonl", []string{"check", noLog}, []string{filepath.Join(noLog, "events.jsonl")}},
		{"malformed result.json", []string{"check", badResult}, []string{"decode result"}},
		{"repro.yaml with an unknown key", []string{"check", badRepro}, []string{"repro.yaml", "chekcs"}},
		{"bad input wins over a pass", []string{"check", runDir(t, "good.jsonl", "", good, ""), missing}, []string{"stored PASS, now PASS", "1 of 2 run directories unreadable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := execute(t, tc.args...)
			if code != exitHarness {
				t.Fatalf("exit %d, want %d:\n%s", code, exitHarness, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
