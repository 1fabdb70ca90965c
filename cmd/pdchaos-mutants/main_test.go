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
