package reports_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/reports"
)

// TestBundle: a bundle is one small file with the resolved scenario (which
// the harness parses back with its seed and regressions), the verdict, the
// failing checkers' evidence and the events around the violations.
func TestBundle(t *testing.T) {
	t.Parallel()
	r, err := reports.Load(failingRun)
	if err != nil {
		t.Fatal(err)
	}
	b, err := reports.NewBundle(r, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.bundle.yaml")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 256<<10 {
		t.Errorf("bundle is %d bytes; it should be small enough to attach", st.Size())
	}
	back, err := reports.ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict != check.Fail || back.Seed != 7 || back.ScenarioName() != "late-registration" {
		t.Errorf("bundle says %s seed %d scenario %s", back.Verdict, back.Seed, back.ScenarioName())
	}
	if !slices.Equal(back.Args, []string{"--target=bundled"}) {
		t.Errorf("target flags %q", back.Args)
	}
	body, err := back.ScenarioYAML()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := harness.ParseScenario(path, body)
	if err != nil {
		t.Fatalf("bundled scenario does not parse: %v\n%s", err, body)
	}
	if sc.Seed != 7 || !slices.Equal(sc.Engine.Regressions, []string{"unknown-room-waiting"}) {
		t.Errorf("scenario seed %d regressions %v", sc.Seed, sc.Engine.Regressions)
	}
	var evidence string
	for _, c := range back.Checks {
		if c.Status == check.Fail {
			evidence += c.Evidence
		}
	}
	if !strings.Contains(evidence, "rooms_held = 14") {
		t.Errorf("failing evidence missing: %q", evidence)
	}
	types := map[string]int{}
	for _, l := range back.Events {
		var ev check.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event line %q: %v", l, err)
		}
		types[ev.Type]++
		if ev.Rooms != nil && len(ev.Rooms.Held) > 10 {
			t.Errorf("rooms snapshot keeps %d rooms", len(ev.Rooms.Held))
		}
	}
	for _, want := range []string{check.EvRun, check.EvFault, check.EvWedge, check.EvScrape, check.EvRooms, check.EvDrain, check.EvEnd} {
		if types[want] == 0 {
			t.Errorf("no %s event in the bundle (%v)", want, types)
		}
	}
	if len(back.Events) >= len(r.Events) {
		t.Errorf("bundle keeps %d of %d events: not the key part", len(back.Events), len(r.Events))
	}
}

// TestParseBundleRejectsRepro: a plain repro.yaml is not a bundle.
func TestParseBundleRejectsRepro(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(failingRun, reports.ReproFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reports.ParseBundle("repro.yaml", b); err == nil {
		t.Fatal("repro.yaml parsed as a bundle")
	}
}

// TestReproArgs reads the target flags from repro.yaml's header.
func TestReproArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, repro string
		want        []string
	}{
		{"external", "# pdchaos repro\n# args: [\"--target=external\",\"--router=http://127.0.0.1:1\",\"--metrics=http://127.0.0.1:2/metrics\"]\nname: x\n",
			[]string{"--target=external", "--router=http://127.0.0.1:1", "--metrics=http://127.0.0.1:2/metrics"}},
		{"none", "# pdchaos repro\nname: x\n", nil},
		{"not in the header", "name: x\n# args: [\"--target=procs\"]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reports.ReproArgs([]byte(tc.repro)); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
