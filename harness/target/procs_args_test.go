package target

import (
	"slices"
	"testing"
	"time"

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

// kv_posted_writes reaches prefill's process, or the scenario's setting
// would be silently ignored under target procs.
func TestEngineArgsCarryPostedWrites(t *testing.T) {
	t.Parallel()
	if a := engineArgs(contract.EngineConfig{KVPostedWrites: 4}); !slices.Contains(a, "--kv-posted-writes=4") {
		t.Errorf("engine args %v lack --kv-posted-writes=4", a)
	}
}

// kv_write_latency reaches prefill's process too.
func TestEngineArgsCarryWriteLatency(t *testing.T) {
	t.Parallel()
	if a := engineArgs(contract.EngineConfig{KVWriteLatency: 20 * time.Millisecond}); !slices.Contains(a, "--kv-write-latency=20ms") {
		t.Errorf("engine args %v lack --kv-write-latency=20ms", a)
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
