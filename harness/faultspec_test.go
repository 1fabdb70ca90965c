package harness

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/catalog"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// TestEveryKindFromYAML: each catalogue kind, written as a scenario entry
// from its example, parses, validates and builds a fault of its layer.
func TestEveryKindFromYAML(t *testing.T) {
	t.Parallel()
	for _, k := range catalog.Kinds() {
		entry := map[string]any{"kind": k.Name, "for": "1s"}
		for n, v := range k.Example {
			entry[n] = v
		}
		doc, err := yaml.Marshal(map[string]any{"name": "x", "duration": "5s", "faults": []any{entry}})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ParseScenario(k.Name+".yaml", doc)
		if err != nil {
			t.Errorf("%s: %v\n%s", k.Name, err, doc)
			continue
		}
		net := network.New()
		es, err := BuildSchedule(sc.Faults, rand.New(rand.NewPCG(1, 2)), net)
		if err != nil {
			t.Errorf("%s: build: %v", k.Name, err)
			continue
		}
		if got := es[0].Fault.Layer(); got != k.Layer || sc.Layers()[0] != k.Layer {
			t.Errorf("%s: layer %s, scenario layers %v, want %s", k.Name, got, sc.Layers(), k.Layer)
		}
		if err := net.Close(t.Context()); err != nil {
			t.Error(err)
		}
	}
}

// TestFaultEntryErrors: a bad fault parameter is one error naming the file,
// line, field and kind; nothing is returned half-built.
func TestFaultEntryErrors(t *testing.T) {
	t.Parallel()
	head := "name: x\nduration: 5s\nfaults:\n  - kind: latency\n    link: kv/0\n    delay: 5ms\n    for: 1s\n"
	for _, tc := range []struct {
		name, entry string
		want        []string
	}{
		{"bound", "  - kind: bandwidth\n    link: kv/0\n    rate: 0\n    for: 1s\n",
			[]string{"bad.yaml:10", "faults[1].rate", "must be > 0", "kind bandwidth"}},
		{"misspelt key", "  - kind: slicer\n    link: kv/0\n    averge_size: 7\n    for: 1s\n",
			[]string{"bad.yaml:10", "faults[1].averge_size", "does not apply to kind slicer", "average_size"}},
		{"missing", "  - kind: limit-data\n    link: kv/0\n    for: 1s\n",
			[]string{"faults[1].bytes", "required", "kind limit-data"}},
		{"type", "  - kind: limit-data\n    link: kv/0\n    bytes: lots\n    for: 1s\n",
			[]string{"bad.yaml:10", "faults[1].bytes", `"lots" is not an integer`, "kind limit-data"}},
		{"enum", "  - kind: slicer\n    link: kv/0\n    stream: sideways\n    average_size: 7\n    for: 1s\n",
			[]string{"bad.yaml:10", "faults[1].stream", "sideways", "upstream, downstream", "kind slicer"}},
		{"duration", "  - kind: timeout\n    link: kv/0\n    after: soon\n    for: 1s\n",
			[]string{"faults[1].after", `"soon" is not a duration`, "kind timeout"}},
		{"message kind", "  - kind: drop-messages\n    link: control/0\n    kinds: [abrt]\n    for: 1s\n",
			[]string{"bad.yaml:10", "faults[1].kinds", `"abrt"`, "kind drop-messages"}},
		{"cross rule", "  - kind: delay-messages\n    link: control/0\n    min: 2s\n    max: 1s\n    for: 1s\n",
			[]string{"faults[1].max", "below min", "kind delay-messages"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := ParseScenario("bad.yaml", []byte(head+tc.entry))
			if err == nil || sc != nil {
				t.Fatalf("accepted: %+v", sc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestFaultSpecCompatible: preset files and a repro.yaml as the earlier
// FaultSpec wrote it parse to the same entries; YAML and JSON round trips
// keep every entry.
func TestFaultSpecCompatible(t *testing.T) {
	t.Parallel()
	old := `name: old
duration: 10s
faults:
    - kind: pause-transfer-writes
      at: 1.2s
      for: 1.2s
      every: 1.5s
      worker: 1
    - kind: delay-messages
      at: 0s
      for: 7s
      link: control/0
      kinds:
        - registration
        - metadata
      min: 50ms
      max: 500ms
    - kind: sigkill
      at: 2s
      for: 1s
      role: decode
      restart: true
`
	var docs []string
	names, err := PresetNames(scenarios.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := scenarios.FS.ReadFile(n + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	matches, _ := filepath.Glob("testdata/*.yaml")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	for i, doc := range append(docs, old) {
		sc, err := ParseScenario(fmt.Sprintf("doc%d.yaml", i), []byte(doc))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		out, err := sc.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseScenario("back.yaml", out)
		if err != nil {
			t.Fatalf("%s: repro form does not parse: %v\n%s", sc.Name, err, out)
		}
		js, err := json.Marshal(sc.Faults)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON []FaultSpec
		if err := json.Unmarshal(js, &fromJSON); err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		for j := range sc.Faults {
			timing := func(f FaultSpec) string { return fmt.Sprint(f.At, f.For, f.Every, f.Count) }
			if w, b, j2 := timing(sc.Faults[j]), timing(back.Faults[j]), timing(fromJSON[j]); b != w || j2 != w {
				t.Errorf("%s faults[%d]: timing %s, after YAML %s, after JSON %s", sc.Name, j, w, b, j2)
			}
			want := built(t, sc.Faults[j])
			if got := built(t, back.Faults[j]); got != want {
				t.Errorf("%s faults[%d]: YAML round trip builds %s, want %s", sc.Name, j, got, want)
			}
			if got := built(t, fromJSON[j]); got != want {
				t.Errorf("%s faults[%d]: JSON round trip builds %s, want %s (%s)", sc.Name, j, got, want, js)
			}
		}
	}
	sc, err := ParseScenario("old.yaml", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{built(t, sc.Faults[0]), built(t, sc.Faults[1]), built(t, sc.Faults[2])}; !reflect.DeepEqual(got, []string{
		"pause-transfer-writes(prefill/-1/worker=1)", "delay-messages(control/0,registration+metadata,50ms-500ms)", "sigkill(decode,restart)"}) {
		t.Errorf("old repro builds %v", got)
	}
}

// built is the name of the fault an entry builds.
func built(t *testing.T, f FaultSpec) string {
	t.Helper()
	net := network.New()
	defer func() { _ = net.Close(t.Context()) }()
	es, err := BuildSchedule([]FaultSpec{f}, rand.New(rand.NewPCG(1, 2)), net)
	if err != nil {
		t.Fatalf("build %s: %v", f.Kind, err)
	}
	return es[0].Fault.Name()
}

// TestRunKVToxics is the must-show for bandwidth, slicer and limit-data: a
// scenario file using all three on the KV link runs end to end against the
// bundled engine; each fault is applied and effective with counters that
// moved, no request hangs, the engine drains, and the fixed engine passes.
// limit-data fails the rooms whose KV stream it cuts, so errors are allowed;
// wrong answers are not (integrity). Not parallel: no-leaks counts every
// goroutine of the process.
func TestRunKVToxics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for 12s")
	}
	sc, err := LoadScenario("testdata/kv-bandwidth-slicer-limit-data.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), RunOptions{Scenario: sc, Seed: 5, ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Faults {
		t.Logf("%s applied=%v evidence=%+v %s", f.Fault, f.Applied, f.Evidence.Counters, f.Error)
	}
	for _, want := range []struct{ prefix, counter string }{
		{"bandwidth(kv/0,up,", "bytes_upstream"},
		{"slicer(kv/0,up,", "bytes_upstream"},
		{"limit_data(kv/0,up,", "connections_closed"},
	} {
		found := false
		for _, f := range res.Faults {
			if !strings.HasPrefix(f.Fault, want.prefix) {
				continue
			}
			found = true
			if !f.Applied || !f.Evidence.Effective || f.Evidence.Counters[want.counter] == 0 || f.Evidence.Counters["windows"] == 0 {
				t.Errorf("%s: applied %v effective %v counters %v (want %s > 0): %s",
					f.Fault, f.Applied, f.Evidence.Effective, f.Evidence.Counters, want.counter, f.Error)
			}
		}
		if !found {
			t.Errorf("no window of %s* in %d fault records", want.prefix, len(res.Faults))
		}
	}
	for _, name := range []string{contract.CheckFaultsVerified, contract.CheckClientOutcomes, contract.CheckSlotsReleased,
		contract.CheckRoomsTerminal, contract.CheckIntegrity, contract.CheckLiveness} {
		if c, _ := res.Checks.Get(name); c.Status != check.Pass {
			t.Errorf("%s: %s: %s", name, c.Status, c.Summary)
		}
	}
	if c, _ := res.Checks.Get(contract.CheckClientOutcomes); c.Evidence[string(outcome.KindHung)] != 0 || c.Evidence["requests"] == 0 {
		t.Errorf("client outcomes: %v", c.Evidence)
	}
	if res.Verdict != check.Pass || res.ExitCode != ExitPass {
		t.Fatalf("verdict %s (exit %d): %v", res.Verdict, res.ExitCode, res.Err())
	}
}
