package harness

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// TestPresetsParse: every preset scenario loads, validates and builds its
// fault schedule; every preset the regression catalogue names is present.
func TestPresetsParse(t *testing.T) {
	t.Parallel()
	names, err := PresetNames(scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	// Which presets exist is the embedded folder itself; the ones the
	// regression catalogue names must be among them.
	for _, r := range contract.Catalogue() {
		if !slices.Contains(names, r.Caught.Scenario) {
			t.Errorf("preset %s (catches %s) missing (have %v)", r.Caught.Scenario, r.Name, names)
		}
	}
	for _, n := range names {
		sc, err := LoadScenario(n, scenarios.FS)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Name != n {
			t.Errorf("%s: name %q", n, sc.Name)
		}
		o, _ := sc.AgentOptions()
		if sc.Checks.withDefaults().DrainDeadline <= sc.Engine.WaitingTimeout {
			t.Errorf("%s: drain deadline must exceed the engine's timeouts", n)
		}
		if o.Agents == 0 {
			t.Errorf("%s: no agents", n)
		}
	}
}

// TestScenarioOverridesPreset: options overlay the scaled preset.
func TestScenarioOverridesPreset(t *testing.T) {
	t.Parallel()
	sc, err := ParseScenario("x.yaml", []byte("name: x\nduration: 5s\nagents:\n  preset: opencode-30\n  scale: 0.1\n  options:\n    agents: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := sc.AgentOptions()
	if o.Agents != 3 || o.ThinkTime != 200*time.Millisecond || o.TurnsPerSession != 12 {
		t.Fatalf("options %+v", o)
	}
}

// TestBadScenario: one clear error naming file, line, field and problem.
func TestBadScenario(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "name: x\nduration: 5s\nengine:\n  tp: 1\n  trasfer_workers: 2\n",
			[]string{"bad.yaml", "line 5", "trasfer_workers", "unknown key"}},
		{"bad duration", "name: x\nduration: five\n", []string{"bad.yaml", "line 2", "five"}},
		{"missing duration", "name: x\n", []string{"bad.yaml", "duration", "must be > 0"}},
		{"bad regression", "name: x\nduration: 5s\nengine:\n  regressions: [abort-befor-status]\n",
			[]string{"bad.yaml:4", "engine", "abort-befor-status", "valid:"}},
		{"bad wire", "name: x\nduration: 5s\nengine:\n  wire: ucx\n",
			[]string{"bad.yaml", "engine", "wire", "ucx", "valid: nixl, mooncake"}},
		{"bad fault kind", "name: x\nduration: 5s\nfaults:\n  - kind: explode\n    for: 1s\n",
			[]string{"bad.yaml:4", "faults[0].kind", "explode", "valid:"}},
		{"param of another kind", "name: x\nduration: 5s\nfaults:\n  - kind: sigstop\n    role: decode\n    link: kv/0\n    for: 1s\n",
			[]string{"bad.yaml:6", "faults[0].link", "does not apply to kind sigstop"}},
		{"overlapping repeat", "name: x\nduration: 5s\nfaults:\n  - kind: stall-bootstrap-loop\n    for: 2s\n    every: 1s\n",
			[]string{"bad.yaml:6", "faults[0].every", "overlap"}},
		{"bad range", "name: x\nduration: 5s\nfaults:\n  - kind: stall-bootstrap-loop\n    for: 2s-1s\n",
			[]string{"bad.yaml", "faults[0].for", "below min"}},
		{"bad agent option", "name: x\nduration: 5s\nagents:\n  options:\n    cancel_decode_rate: 1.5\n",
			[]string{"bad.yaml:5", "agents.options", "cancel_decode_rate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseScenario("bad.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("bad scenario accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// TestLoadScenarioUnknown names the presets.
func TestLoadScenarioUnknown(t *testing.T) {
	t.Parallel()
	_, err := LoadScenario("no-such-thing", scenarios.FS)
	if err == nil || !strings.Contains(err.Error(), "abort-storm") {
		t.Fatalf("error %v should list presets", err)
	}
}
