package main

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/faults/catalog"
)

// TestFaultsList prints every kind with its layer and parameters.
func TestFaultsList(t *testing.T) {
	code, out := execute(t, "faults", "list")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, k := range catalog.Kinds() {
		if !strings.Contains(out, "\n"+k.Name+" ["+string(k.Layer)+"]") {
			t.Errorf("list lacks kind %s [%s]", k.Name, k.Layer)
		}
		for _, p := range k.Params {
			if !strings.Contains(out, "    "+p.Name+" ") {
				t.Errorf("list lacks parameter %s of %s", p.Name, k.Name)
			}
		}
	}
	if !strings.Contains(out, "default downstream") || !strings.Contains(out, "required; > 0") {
		t.Errorf("list lacks defaults or bounds:\n%s", out)
	}
	if code, out := execute(t, "faults", "list", "explode"); code != exitHarness || !strings.Contains(out, "explode") {
		t.Errorf("unknown kind: exit %d: %s", code, out)
	}
}
