package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Better says which direction of a figure is good.
type Better string

// The directions a figure can improve in.
const (
	Higher Better = "higher"
	Lower  Better = "lower"
)

// Figure is one measurement, with the reference it is judged against when
// one was measured in the same run.
type Figure struct {
	// Group is the part of the benchmark: engine, harness or memory.
	Group string `json:"group"`
	// Name identifies the figure across runs, e.g. "engine/stream/c64/rps".
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Reference and RefName are the same run's reference figure (the bare
	// handler, vegeta alone); zero and empty where there is none.
	Reference float64 `json:"reference,omitempty"`
	RefName   string  `json:"ref_name,omitempty"`
	// Ratio is Value/Reference where a reference exists.
	Ratio  float64 `json:"ratio,omitempty"`
	Better Better  `json:"better"`
	Note   string  `json:"note,omitempty"`
}

func withRef(f Figure, ref float64, refName string) Figure {
	f.Reference, f.RefName = ref, refName
	if ref != 0 {
		f.Ratio = f.Value / ref
	}
	return f
}

// Host describes the machine a report was measured on.
type Host struct {
	CPUs      int     `json:"cpus"`
	GoVersion string  `json:"go_version"`
	Load1     float64 `json:"load1"`
}

// Report is one `pdchaos bench` run, written as bench.json.
type Report struct {
	Versions map[string]string `json:"versions"`
	Started  time.Time         `json:"started"`
	Duration time.Duration     `json:"duration_ns"`
	Host     Host              `json:"host"`
	Figures  []Figure          `json:"figures"`
	// Skipped names the parts not run and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Figure returns the figure named name.
func (r Report) Figure(name string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// Write stores the report as dir/bench.json and dir/bench.md.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write bench report: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bench.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write bench.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write bench.md: %w", err)
	}
	return nil
}

// ReadReport loads a bench.json written by Write.
func ReadReport(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read bench report: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read bench report %s: %w", path, err)
	}
	return r, nil
}

// Markdown renders the report as one table per group.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# pdchaos bench\n\npdchaos %s, %s, %d CPUs, load %.1f at start, %s, took %s\n", r.Versions["revision"],
		r.Started.UTC().Format(time.RFC3339), r.Host.CPUs, r.Host.Load1, r.Host.GoVersion, r.Duration.Round(time.Second))
	groups := map[string][]Figure{}
	var order []string
	for _, f := range r.Figures {
		if _, ok := groups[f.Group]; !ok {
			order = append(order, f.Group)
		}
		groups[f.Group] = append(groups[f.Group], f)
	}
	for _, g := range order {
		fmt.Fprintf(&b, "\n## %s\n\n| figure | value | reference (same run) | ratio | better | note |\n|---|---|---|---|---|---|\n", g)
		for _, f := range groups[g] {
			ref, ratio := "", ""
			if f.RefName != "" {
				ref = fmt.Sprintf("%s %s %s", f.RefName, num(f.Reference), f.Unit)
				ratio = fmt.Sprintf("%.3f", f.Ratio)
			}
			fmt.Fprintf(&b, "| %s | %s %s | %s | %s | %s | %s |\n", f.Name, num(f.Value), f.Unit, ref, ratio, f.Better, f.Note)
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\n## not measured\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

// Change is a figure that got worse between two reports.
type Change struct {
	Name string
	// Base and Current are the compared quantities: the ratio where both
	// runs have a reference (it survives machine drift), else the value.
	Base, Current float64
	// Worse is the relative change in the bad direction (0.2 = 20% worse).
	Worse   float64
	ByRatio bool
	Missing bool
}

func (c Change) String() string {
	if c.Missing {
		return fmt.Sprintf("%s: in the base report, missing now", c.Name)
	}
	what := "value"
	if c.ByRatio {
		what = "ratio to its reference"
	}
	return fmt.Sprintf("%s: %s %s -> %s (%.0f%% worse)", c.Name, what, num(c.Base), num(c.Current), 100*c.Worse)
}

// Compare lists the figures of cur that are worse than in base by more than
// threshold (a fraction: 0.2 is 20%), and base figures cur lacks. Ratios are
// compared where both runs measured a reference.
func Compare(base, cur Report, threshold float64) []Change {
	var out []Change
	for _, bf := range base.Figures {
		cf, ok := cur.Figure(bf.Name)
		if !ok {
			out = append(out, Change{Name: bf.Name, Missing: true})
			continue
		}
		b, c, byRatio := bf.Value, cf.Value, false
		if bf.Ratio != 0 && cf.Ratio != 0 {
			b, c, byRatio = bf.Ratio, cf.Ratio, true
		}
		if b == 0 {
			continue
		}
		worse := (c - b) / math.Abs(b)
		if cf.Better == Higher {
			worse = -worse
		}
		if worse > threshold {
			out = append(out, Change{Name: bf.Name, Base: b, Current: c, Worse: worse, ByRatio: byRatio})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
