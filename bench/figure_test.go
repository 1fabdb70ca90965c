package bench

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/harness/check"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	base := Report{Figures: []Figure{
		withRef(Figure{Name: "rps", Value: 100, Better: Higher}, 400, "bare"),   // ratio 0.25
		withRef(Figure{Name: "cpu", Value: 300, Better: Lower}, 200, "vegeta"),  // ratio 1.5
		{Name: "rss", Value: 50, Better: Lower},                                 // no reference: by value
		{Name: "gone", Value: 1, Better: Lower},                                 // missing later
		withRef(Figure{Name: "drift", Value: 100, Better: Higher}, 400, "bare"), // machine twice as slow, same ratio
	}}
	cur := Report{Figures: []Figure{
		withRef(Figure{Name: "rps", Value: 100, Better: Higher}, 800, "bare"),  // ratio 0.125: 50% worse
		withRef(Figure{Name: "cpu", Value: 330, Better: Lower}, 200, "vegeta"), // ratio 1.65: 10% worse, under threshold
		{Name: "rss", Value: 70, Better: Lower},                                // 40% worse
		withRef(Figure{Name: "drift", Value: 50, Better: Higher}, 200, "bare"), // value halved, ratio unchanged
	}}
	got := map[string]Change{}
	for _, c := range Compare(base, cur, 0.2) {
		got[c.Name] = c
	}
	if len(got) != 3 {
		t.Fatalf("changes %v, want rps, rss and gone", got)
	}
	if c := got["rps"]; !c.ByRatio || math.Abs(c.Worse-0.5) > 1e-9 {
		t.Errorf("rps: %+v, want 50%% worse by ratio", c)
	}
	if c := got["rss"]; c.ByRatio || math.Abs(c.Worse-0.4) > 1e-9 {
		t.Errorf("rss: %+v, want 40%% worse by value", c)
	}
	if c := got["gone"]; !c.Missing || !strings.Contains(c.String(), "missing") {
		t.Errorf("gone: %+v, want missing", c)
	}
	if len(Compare(base, base, 0)) != 0 {
		t.Error("a report compared with itself has changes")
	}
}

func TestReportRoundTrip(t *testing.T) {
	t.Parallel()
	r := Report{Versions: map[string]string{"revision": "abc"}, Started: time.Unix(1, 0).UTC(), Host: Host{CPUs: 2},
		Figures: []Figure{withRef(Figure{Group: "engine", Name: "engine/plain/c64/rps", Value: 250, Unit: "req/s", Better: Higher}, 1000, "bare handler")},
		Skipped: []string{"memory: not in --parts"}}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := back.Figure("engine/plain/c64/rps"); !ok || f.Ratio != 0.25 || f.RefName != "bare handler" {
		t.Errorf("figure after round trip: %+v %v", f, ok)
	}
	md := r.Markdown()
	for _, want := range []string{"## engine", "| engine/plain/c64/rps | 250 req/s | bare handler 1000 req/s | 0.250 | higher |", "- memory: not in --parts"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if _, err := ReadReport(filepath.Join(dir, "bench.md")); err == nil {
		t.Error("reading markdown as bench.json did not fail")
	}
}

func TestSlopeAndAt(t *testing.T) {
	t.Parallel()
	var flat, growing []Sample
	for i := range 31 {
		d := time.Duration(i) * time.Minute
		flat = append(flat, Sample{At: d, RSS: 50 << 20})
		growing = append(growing, Sample{At: d, RSS: int64(50+2*i) << 20})
	}
	flat[0].RSS = 90 << 20 // warm-up spike, excluded
	rss := func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }
	if s, n := slope(series(flat, time.Minute, rss)); s != 0 || n != 30 {
		t.Errorf("flat after warm-up: slope %v over %d samples, want 0 over 30", s, n)
	}
	if s, _ := slope(series(growing, time.Minute, rss)); math.Abs(s-2) > 1e-9 {
		t.Errorf("growing: slope %v MiB/min, want 2", s)
	}
	if s, n := slope(series(flat[:2], 0, rss)); s != 0 || n != 2 {
		t.Errorf("two samples: slope %v n %d, want no slope", s, n)
	}
	if got := at(growing, 10*time.Minute+30*time.Second); got.At != 10*time.Minute {
		t.Errorf("at 10m30s: sample at %v, want 10m", got.At)
	}
	if got := at(growing, -time.Second); got.At != 0 {
		t.Errorf("before the first sample: %v, want the first", got.At)
	}
}

// A soak's in-process engine comes and goes with each run: the floor
// between runs is judged, so run peaks neither hide growth nor fake it.
func TestMemoryFloors(t *testing.T) {
	t.Parallel()
	var flat, leaking []Sample
	for i := range 181 { // 30 minutes every 10 s, a run peak every third sample
		d := time.Duration(i) * 10 * time.Second
		peak := int64(0)
		if i%3 == 1 {
			peak = 300
		}
		flat = append(flat, Sample{At: d, Goroutines: 7 + int(peak), RSS: (50 + peak) << 20})
		leaking = append(leaking, Sample{At: d, Goroutines: 7 + i/6 + int(peak), RSS: (50 + peak) << 20})
	}
	o := MemoryOptions{Duration: 30 * time.Minute}.withDefaults()
	get := func(figs []Figure, name string) float64 {
		for _, f := range figs {
			if f.Name == name {
				return f.Value
			}
		}
		t.Fatalf("no figure %s in %+v", name, figs)
		return 0
	}
	ff := memoryFigures("soak", flat, o)
	for _, n := range []string{"memory/soak/goroutines@1m", "memory/soak/goroutines@10m", "memory/soak/goroutines@30m"} {
		if v := get(ff, n); v != 7 {
			t.Errorf("flat %s = %v, want the between-runs floor 7", n, v)
		}
	}
	if v := get(ff, "memory/soak/goroutines-growth"); v != 0 {
		t.Errorf("flat goroutine growth %v/min, want 0", v)
	}
	if v := get(ff, "memory/soak/rss@30m"); v != 50 {
		t.Errorf("flat rss@30m %v MiB, want 50", v)
	}
	if v := get(memoryFigures("soak", leaking, o), "memory/soak/goroutines-growth"); v < 0.9 || v > 1.1 {
		t.Errorf("leaking one goroutine a minute: growth %v/min, want about 1", v)
	}
}

func TestDetectionOf(t *testing.T) {
	t.Parallel()
	s := time.Second
	evs := []check.Event{
		{T: 1 * s, Type: check.EvPhase, Phase: "warmup"},
		{T: 7 * s, Type: check.EvWedge, Wedge: &check.Wedge{Kind: check.WedgeRoom, Since: 3 * s, Deadline: 2 * s, At: 7 * s}},
		{T: 8 * s, Type: check.EvWedge, Wedge: &check.Wedge{Kind: check.WedgeRoom, Since: 2 * s, Deadline: 4 * s, At: 8 * s}},
		{T: 9 * s, Type: check.EvWedge, Wedge: &check.Wedge{Gauge: "sglang:num_decode_transfer_queue_reqs", At: 9 * s}},
		{T: 12 * s, Type: check.EvPhase, Phase: "judge"},
	}
	d := detectionOf(evs)
	if d.missed != 5*s || d.firstWedge != 7*s || d.gaugeWedge != 9*s || d.verdict != 12*s {
		t.Errorf("detection %+v, want missed 5s, first wedge 7s, gauge wedge 9s, verdict 12s", d)
	}
	if d := detectionOf(evs[3:4]); d.missed != -1 || d.gaugeWedge != 9*s {
		t.Errorf("gauge wedge only: %+v, want no missed deadline", d)
	}
	if v, n := median([]time.Duration{3 * s, 1 * s, 2 * s}); v != 2 || n != 3 {
		t.Errorf("median %v of %d, want 2 of 3", v, n)
	}
	if v, n := median(nil); v != -1 || n != 0 {
		t.Errorf("median of nothing %v %d, want -1 0", v, n)
	}
}
