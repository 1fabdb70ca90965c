package labels

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// kindsNoPresetUses lists, sorted, the catalogue fault kinds that no preset
// in presets schedules.
func kindsNoPresetUses(presets fs.FS) ([]string, error) {
	names, err := harness.PresetNames(presets)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, n := range names {
		s, err := harness.LoadScenario(n, presets)
		if err != nil {
			return nil, fmt.Errorf("load preset %s: %w", n, err)
		}
		for _, f := range s.Faults {
			used[f.Kind] = true
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(harness.FaultKinds())) {
		if !used[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// TestEveryFaultKindInAGatePreset: the gate runs every preset, so a fault
// kind no preset schedules is code the gate never exercises on the engine.
// It fails naming each such kind.
func TestEveryFaultKindInAGatePreset(t *testing.T) {
	missing, err := kindsNoPresetUses(scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range missing {
		t.Errorf("fault kind %s (faults/catalog) is used by no gate preset: schedule it in a suites/scenarios file", k)
	}
}

// The check itself must fail on a preset set that leaves kinds out.
func TestKindsNoPresetUsesNamesTheGaps(t *testing.T) {
	one, err := fs.ReadFile(scenarios.FS, "control-link-reset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := kindsNoPresetUses(fstest.MapFS{"control-link-reset.yaml": {Data: one}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(missing, "reset-peer") || !slices.Contains(missing, "kv-chunks") || !slices.Contains(missing, "sigstop") {
		t.Fatalf("with only control-link-reset, missing = %s: want every kind but reset-peer", strings.Join(missing, ", "))
	}
	if len(missing) != len(harness.FaultKinds())-1 {
		t.Fatalf("with only control-link-reset, %d kinds missing, want %d", len(missing), len(harness.FaultKinds())-1)
	}
}
