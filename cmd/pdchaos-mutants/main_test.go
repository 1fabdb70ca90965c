package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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

// --planted without simulated seeds, or naming a bug the corpus lacks, is
// refused with the reason before anything is copied or built.
func TestPlantedRefusesBadFlags(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	corpus := filepath.Join(root, mutate.PlantedFile)
	results := t.TempDir()
	for _, tc := range []struct {
		name  string
		only  []string
		seeds int
	}{{"no --sim", nil, 0}, {"unknown bug", []string{"no-such-bug"}, 1}} {
		if code := runPlanted(root, corpus, tc.only, results, t.TempDir(), 1, tc.seeds, 0, time.Minute); code != 3 {
			t.Errorf("%s: exit %d, want 3", tc.name, code)
		}
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("refused screens wrote %d files", len(entries))
	}
}
