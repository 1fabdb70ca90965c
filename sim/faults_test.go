package sim

import (
	"testing"

	"github.com/pdchaos/pdchaos/faults"
)

// Each engine and process kind the simulator carries out, named as its
// windows name themselves, has a row in faults' effect table with its
// layer: the checkers read a simulated fault's reach from there as they
// read a live one's.
func TestModelledLoopFaultsHaveEffects(t *testing.T) {
	t.Parallel()
	rows := faults.EffectKinds()
	for _, kind := range Modelled() {
		layer := layerOf(kind)
		if layer != faults.LayerEngine && layer != faults.LayerProcess {
			continue
		}
		for _, f := range []Fault{{Kind: kind, Role: "prefill", Rank: -1, Worker: -1}, {Kind: kind, Role: "decode", Rank: 0, Worker: -1}} {
			name := (&window{f: f}).name()
			n := faults.ReadName(name)
			if got, ok := rows[n.Kind]; !ok || got != layer {
				t.Errorf("simulated %s window %q reads as kind %q: effect row layer %q (present %v), want %s", kind, name, n.Kind, got, ok, layer)
			}
		}
	}
}
