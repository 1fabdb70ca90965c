package main

import (
	"slices"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/mutate"
)

// internal/mutate may not import the module it mutates, so it keeps its
// own list of the dialects a preset may be screened in; it must be the
// contract's, or NAME@WIRE would refuse a dialect pdchaos runs.
func TestMutateWiresAreTheContracts(t *testing.T) {
	var want []string
	for _, w := range contract.Wires() {
		want = append(want, string(w))
	}
	if !slices.Equal(mutate.Wires, want) {
		t.Errorf("mutate.Wires %v; contract.Wires() %v", mutate.Wires, want)
	}
}

// Every probe of a regression's own branch names a regression the
// catalogue says how to catch, so the screen runs its mutants with the
// regression on instead of calling them not reached.
func TestEveryRegressionBranchHasACatch(t *testing.T) {
	t.Parallel()
	catches := regressionCatches()
	for probe, reg := range regressionBranches() {
		c, ok := catches[probe]
		if !ok {
			t.Errorf("probe %s: regression %s has no catching preset in contract.Catalogue", probe, reg)
			continue
		}
		if c.Regression != reg || c.Preset == "" || c.Checker == "" {
			t.Errorf("probe %s: catch %+v; want regression %s with a preset and a checker", probe, c, reg)
		}
	}
	if len(catches) == 0 {
		t.Error("no probe marks a regression's own branch")
	}
}
