package labels

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
)

// Plain labels and tiers. A tier says where a spec runs: smoke on every
// change, gate before a release, soak for hours.
const (
	TierSmoke  = "tier:smoke"
	TierGate   = "tier:gate"
	TierSoak   = "tier:soak"
	Slow       = "slow"       // a spec that takes longer than a few seconds
	Disruptive = "disruptive" // a spec that kills or restarts processes
	// Serial is the label Ginkgo itself adds to every spec decorated
	// Serial (so `-ginkgo.label-filter='!Serial'` works); it is accepted,
	// never written by hand.
	Serial = "Serial"
)

// Fault labels a spec by a fault kind it injects.
func Fault(kind string) string { return "fault:" + kind }

// Component labels a spec by a component it exercises.
func Component(name string) string { return "component:" + name }

// Regression labels a spec that must catch the named engine regression.
func Regression(name string) string { return "regression:" + name }

// Vocabulary is the set of valid labels. Build it with New; the zero value
// accepts nothing.
type Vocabulary struct {
	valid map[string]bool
}

// New builds the vocabulary from the harness fault catalogue, the engine
// regression catalogue and the fixed components, tiers and flags.
func New() Vocabulary {
	v := Vocabulary{valid: map[string]bool{TierSmoke: true, TierGate: true, TierSoak: true, Slow: true, Disruptive: true,
		Serial: true}}
	for kind := range harness.FaultKinds() {
		v.valid[Fault(kind)] = true
	}
	// Faults the agents inject themselves (not scenario fault kinds).
	for _, kind := range []string{"cancel", "kill-all"} {
		v.valid[Fault(kind)] = true
	}
	// The parts of the system a spec exercises.
	for _, c := range []string{"engine", "prefill", "decode", "router", "bootstrap", "transfer",
		"control-link", "kv-pool", "tp", "procs", "agents"} {
		v.valid[Component(c)] = true
	}
	for _, r := range contract.RegressionNames() {
		v.valid[Regression(r)] = true
	}
	return v
}

// Valid reports whether label is in the vocabulary.
func (v Vocabulary) Valid(label string) bool { return v.valid[label] }

// List returns every valid label, sorted (for error messages and docs).
func (v Vocabulary) List() []string {
	out := make([]string, 0, len(v.valid))
	for l := range v.valid {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Check returns an error naming every label not in the vocabulary.
func (v Vocabulary) Check(labels ...string) error {
	var bad []string
	for _, l := range labels {
		if !v.valid[l] && !slices.Contains(bad, l) {
			bad = append(bad, l)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("unknown labels %q: not in the suites vocabulary (see suites/labels; valid: %s)",
		bad, strings.Join(v.List(), ", "))
}

// Label is ginkgo.Label for vocabulary labels only. An unknown label
// panics while the spec tree is built, which fails the whole suite before
// any spec runs (suites may panic; libraries may not).
func (v Vocabulary) Label(labels ...string) ginkgo.Labels {
	if err := v.Check(labels...); err != nil {
		panic(err)
	}
	return ginkgo.Label(labels...)
}
