package labels

import (
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

func TestVocabulary(t *testing.T) {
	t.Parallel()
	v := New()
	for _, tc := range []struct {
		label string
		ok    bool
	}{
		{TierGate, true},
		{Slow, true},
		{Disruptive, true},
		{Serial, true},
		{Fault("reset-peer"), true},
		{Fault("cancel"), true},
		{Component("decode"), true},
		{Regression(contract.RankDesync), true},
		{"tier:nightly", false},
		{Fault("meteor-strike"), false},
		{Regression("not-a-bug"), false},
		{"flaky", false},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			if got := v.Valid(tc.label); got != tc.ok {
				t.Fatalf("Valid(%q) = %v, want %v", tc.label, got, tc.ok)
			}
		})
	}
	err := v.Check(TierGate, "flaky", "flaky", "tier:nightly")
	if err == nil || !strings.Contains(err.Error(), `"flaky" "tier:nightly"`) {
		t.Fatalf("Check: %v", err)
	}
	if err := v.Check(v.List()...); err != nil {
		t.Fatal(err)
	}
}

func TestLabelPanicsOnUnknown(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Label accepted an unknown label")
		}
	}()
	New().Label("flaky")
}

// Every label must also be valid for Ginkgo (no "/", "," and the like).
func TestLabelsAreGinkgoLabels(t *testing.T) {
	t.Parallel()
	for _, l := range New().List() {
		if strings.ContainsAny(l, "&|!,()/") || strings.HasPrefix(l, ":") {
			t.Errorf("label %q is not a valid Ginkgo label", l)
		}
	}
}

// TestEveryPresetHasLabels: the gate runs every embedded preset; each must
// have gate labels from the vocabulary, and no entry may name a preset
// that does not exist.
func TestEveryPresetHasLabels(t *testing.T) {
	names, err := harness.PresetNames(scenarios.FS)
	if err != nil || len(names) == 0 {
		t.Fatalf("no presets embedded: %v", err)
	}
	v := New()
	for _, n := range names {
		p, ok := Presets()[n]
		if !ok {
			t.Errorf("preset %s (suites/scenarios/%s.yaml) has no entry in labels.Presets()", n, n)
			continue
		}
		for _, c := range p.Components {
			if !v.Valid(Component(c)) {
				t.Errorf("preset %s: component %q is not in the vocabulary", n, c)
			}
		}
	}
	for n := range Presets() {
		if !slices.Contains(names, n) {
			t.Errorf("labels.Presets() names %s, but suites/scenarios has no %s.yaml", n, n)
		}
	}
}
