package main

import (
	"encoding/json"
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
