package harness

import (
	"bytes"
	"io/fs"
	"os"
	"testing"

	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// FuzzParseScenario reads any bytes as a scenario file or a run's
// repro.yaml (the same format, with a comment header): no panic; a
// scenario that loads renders (Scenario.YAML, what repro.yaml holds) to a
// file that loads to a scenario rendering the same, so a repro bundle
// replays the scenario it recorded. Seeded with every preset, each as its
// repro.yaml, and harness/testdata.
func FuzzParseScenario(f *testing.F) {
	presets, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range presets {
		b, err := fs.ReadFile(scenarios.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		sc, err := ParseScenario(name, b)
		if err != nil {
			f.Fatalf("preset %s: %v", name, err)
		}
		sc.Seed = 42
		repro, err := sc.YAML()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte("# pdchaos repro: scenario "+sc.Name+", seed 42, target bundled\n"), repro...))
	}
	if b, err := os.ReadFile("testdata/kv-bandwidth-slicer-limit-data.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("name: x\nfaults:\n  - kind: no-such-kind\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		sc, err := ParseScenario("fuzz.yaml", in)
		if err != nil {
			return
		}
		once, err := sc.YAML()
		if err != nil {
			t.Fatalf("scenario that loads does not render: %v", err)
		}
		back, err := ParseScenario("repro.yaml", once)
		if err != nil {
			t.Fatalf("rendered scenario does not load: %v\n%s", err, once)
		}
		twice, err := back.YAML()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the scenario:\n%s\n---\n%s(%v)", once, twice, err)
		}
	})
}
