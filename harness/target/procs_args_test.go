package target

import (
	"slices"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// Every role process gets the scenario's wire dialect, so both sides speak
// the same one; the default passes no flag.
func TestEngineArgsCarryWire(t *testing.T) {
	t.Parallel()
	if a := engineArgs(contract.EngineConfig{Wire: contract.WireMooncake}); !slices.Contains(a, "--wire=mooncake") {
		t.Errorf("engine args %v lack --wire=mooncake", a)
	}
	for _, a := range engineArgs(contract.EngineConfig{}) {
		if len(a) > 6 && a[:6] == "--wire" {
			t.Errorf("default config passes %s", a)
		}
	}
}

// A profile reaches every role process, so a role started from a config
// that only names the profile runs its regressions and wire too.
func TestEngineArgsCarryProfile(t *testing.T) {
	t.Parallel()
	if a := engineArgs(contract.EngineConfig{Profile: contract.ProfileSGLangNIXL}); !slices.Contains(a, "--profile=sglang-nixl") {
		t.Errorf("engine args %v lack --profile=sglang-nixl", a)
	}
}
