package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// TestScenarioProfileKey: `engine.profile` expands at load time into the
// profile's wire and regressions (merged with the scenario's own), and a
// bad profile or a conflicting wire is one error at the key's line naming
// the problem.
func TestScenarioProfileKey(t *testing.T) {
	t.Parallel()
	sc, err := ParseScenario("p.yaml", []byte("name: x\nduration: 5s\nengine:\n  profile: sglang-mooncake\n  regressions: [decode-abort-leak]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{contract.AbortBeforeStatus, contract.StatusResurrection, contract.RankDesync, contract.FreeBeforeAck, contract.DecodeAbortLeak}
	if sc.Engine.Wire != contract.WireMooncake || !slices.Equal(sc.Engine.Regressions, want) {
		t.Fatalf("engine after load: wire %q regressions %v; want mooncake %v", sc.Engine.Wire, sc.Engine.Regressions, want)
	}
	// The resolved scenario (repro.yaml) loads again to the same settings.
	b, err := sc.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseScenario("repro.yaml", b)
	if err != nil || again.Engine.Profile != contract.ProfileSGLangMooncake || !slices.Equal(again.Engine.Regressions, want) {
		t.Fatalf("reloaded resolved scenario: %+v, %v", again.Engine, err)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown profile", "name: x\nduration: 5s\nengine:\n  tp: 1\n  profile: sglang-ucx\n",
			[]string{"bad.yaml:5", "engine.profile", `"sglang-ucx"`, "valid: sglang-nixl, sglang-mooncake"}},
		{"wire conflict", "name: x\nduration: 5s\nengine:\n  wire: nixl\n  profile: sglang-mooncake\n",
			[]string{"bad.yaml:5", "engine.profile", "wire mooncake", "wire nixl"}},
	} {
		_, err := ParseScenario("bad.yaml", []byte(tc.yaml))
		if err == nil {
			t.Fatalf("%s: accepted", tc.name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

// TestSetProfile is --profile on a preset: it merges with the preset's
// settings; a different profile already in the scenario, or a wire the
// profile does not speak, is refused naming both.
func TestSetProfile(t *testing.T) {
	t.Parallel()
	sc, err := LoadScenario("tp2-abort-storm", scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.SetProfile(contract.ProfileSGLangNIXL); err != nil {
		t.Fatal(err)
	}
	if sc.Engine.TP != 2 || sc.Engine.Wire != contract.WireNIXL || !slices.Contains(sc.Engine.Regressions, contract.UnknownRoomWaiting) {
		t.Fatalf("after SetProfile: %+v", sc.Engine)
	}
	if err := sc.Validate(); err != nil {
		t.Fatalf("scenario with a profile no longer validates: %v", err)
	}
	if err := sc.SetProfile(contract.ProfileSGLangMooncake); err == nil ||
		!strings.Contains(err.Error(), contract.ProfileSGLangMooncake) || !strings.Contains(err.Error(), contract.ProfileSGLangNIXL) {
		t.Fatalf("second, different profile: err %v, want one naming both", err)
	}
	wired := &Scenario{Name: "w", Engine: contract.EngineConfig{Wire: contract.WireMooncake}}
	if err := wired.SetProfile(contract.ProfileSGLangNIXL); err == nil || !strings.Contains(err.Error(), "wire mooncake") {
		t.Fatalf("wire conflict: err %v", err)
	}
	if err := wired.SetProfile("nope"); err == nil || !strings.Contains(err.Error(), "valid: sglang-nixl") {
		t.Fatalf("unknown profile: err %v", err)
	}
}
