package labels

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
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
