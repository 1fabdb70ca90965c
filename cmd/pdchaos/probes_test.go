package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestProbesList prints every probe with its side and place in the code.
func TestProbesList(t *testing.T) {
	code, out := execute(t, "probes")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, p := range contract.Probes() {
		if len(p.Sites) == 0 {
			t.Errorf("probe %s has no place in the code", p.Name)
			continue
		}
		if !strings.Contains(out, p.Name+" ") || !strings.Contains(out, p.Sites[0]) {
			t.Errorf("list lacks %s at %s", p.Name, p.Sites[0])
		}
	}
	if code, out := execute(t, "probes", "--side", "router"); code != exitPass || strings.Contains(out, "prefill/") || !strings.Contains(out, "router/bad-event") {
		t.Errorf("--side router: exit %d:\n%s", code, out)
	}
	if code, out := execute(t, "probes", "no/such-probe"); code != exitHarness || !strings.Contains(out, "no/such-probe") {
		t.Errorf("unknown probe: exit %d: %s", code, out)
	}
}

// TestProbesJSON is the machine form: every probe, with its sites.
func TestProbesJSON(t *testing.T) {
	code, out := execute(t, "probes", "--json")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	var got []contract.Probe
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if len(got) != contract.NumProbes {
		t.Fatalf("%d probes, want %d", len(got), contract.NumProbes)
	}
	for _, p := range got {
		if p.Name == "" || p.Side == "" || p.Doc == "" || len(p.Sites) == 0 || !strings.Contains(p.Sites[0], ".go:") {
			t.Errorf("incomplete probe %+v", p)
		}
	}
}

// TestProbesRuns is the coverage table over stored runs: each probe with
// the runs and scenarios that hit it, unhit ones last and failing the
// exit code, and no runs a clear error.
func TestProbesRuns(t *testing.T) {
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
	write("a", `{"scenario":"abort-storm","probes":{"decode/abort":3,"prefill/local-abort":0}}`)
	write("b", `{"scenario":"abort-storm","probes":{"decode/abort":1}}`)
	write("c", `{"scenario":"abort-storm","regressions":["decode-abort-leak"],"probes":{"decode/abort":2,"prefill/local-abort":5}}`)
	code, out := execute(t, "probes", "decode/abort", "prefill/local-abort", "--runs", dir)
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"abort-storm 2/2, abort-storm [decode-abort-leak] 1/1", "2 probes, 2 hit, 0 unhit, 0 never to be hit (asserted), over 3 runs of 2 scenarios"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`decode/abort\s+\S+\s+3\s+6\s`).MatchString(out) {
		t.Errorf("decode/abort should be hit by 3 runs, 6 times:\n%s", out)
	}
	code, out = execute(t, "probes", "decode/abort", "router/bad-event", "--runs", dir)
	if code != exitViolation || !regexp.MustCompile(`router/bad-event\s+\S+\s+0\s+0\s+UNHIT`).MatchString(out) || !strings.Contains(out, "1 of 2 probes hit by none of 3 runs") {
		t.Errorf("an unhit probe: exit %d:\n%s", code, out)
	}
	// A Never probe no run hit is asserted, not missing: it leaves the exit
	// code alone.
	code, out = execute(t, "probes", "decode/abort", "prefill/orphan-status-swept", "--runs", dir)
	if code != exitPass || !regexp.MustCompile(`prefill/orphan-status-swept\s+\S+\s+0\s+0\s+never \(asserted`).MatchString(out) ||
		!strings.Contains(out, "2 probes, 1 hit, 0 unhit, 1 never to be hit") {
		t.Errorf("a Never probe: exit %d:\n%s", code, out)
	}
	if code, out := execute(t, "probes", "--runs", t.TempDir()); code != exitHarness || !strings.Contains(out, "no result.json") {
		t.Errorf("no runs: exit %d: %s", code, out)
	}
}
