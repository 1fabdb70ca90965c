package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pdchaos/pdchaos/harness/check"
)

// Soak file names.
const (
	SoakFile  = "soak.json"
	IndexFile = "index.html"
)

// SoakRun is one run of a soak, as soak.json lists it.
type SoakRun struct {
	Scenario string        `json:"scenario"`
	Seed     uint64        `json:"seed"`
	Verdict  check.Status  `json:"verdict"`
	First    string        `json:"first_failure,omitempty"`
	Error    string        `json:"error,omitempty"`
	Dir      string        `json:"dir,omitempty"`
	Start    time.Duration `json:"start"`
	Duration time.Duration `json:"duration"`
	// Checks are the run's judgements (evidence included), kept so the
	// soak's JUnit has every checker even when a passing run's directory
	// was removed.
	Checks check.Checks `json:"checks,omitempty"`
}

// Soak is soak.json: the soak's verdict and every run in start order.
type Soak struct {
	Verdict  check.Status  `json:"verdict"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Runs     []SoakRun     `json:"runs"`
}

// ReadSoak reads dir/soak.json.
func ReadSoak(dir string) (*Soak, error) {
	b, err := os.ReadFile(filepath.Join(dir, SoakFile))
	if err != nil {
		return nil, fmt.Errorf("read soak: %w", err)
	}
	var s Soak
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode %s: %w", filepath.Join(dir, SoakFile), err)
	}
	return &s, nil
}

// verdictRank orders runs for the index: failures first, then errors,
// inconclusive, passes.
func verdictRank(v check.Status) int {
	switch v {
	case check.Fail:
		return 0
	case check.Pass:
		return 3
	case check.Inconclusive:
		return 2
	}
	return 1
}

// soakPage is what soak.tmpl renders.
type soakPage struct {
	S        *Soak
	Style    template.CSS
	Rows     []soakRow
	Timeline Chart
	Counts   map[string]int
}

// soakRow is one run in the index.
type soakRow struct {
	N int
	SoakRun
	Link, Failing string
}

// WriteSoak writes a soak directory's index.html (every run, failing
// first, with its verdict, seed, failing checker and a link to its report;
// a timeline of the whole soak) and junit.xml.
func WriteSoak(dir string, s *Soak) error {
	var b bytes.Buffer
	if err := s.WriteHTML(&b, dir); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, IndexFile), b.Bytes()); err != nil {
		return err
	}
	b.Reset()
	if err := s.WriteJUnit(&b); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, JUnitFile), b.Bytes())
}

// WriteHTML renders the soak index; links to run reports are relative to
// dir, where index.html lives.
func (s *Soak) WriteHTML(w io.Writer, dir string) error {
	t, err := templates()
	if err != nil {
		return err
	}
	css, err := style()
	if err != nil {
		return err
	}
	pg := soakPage{S: s, Style: css, Counts: map[string]int{}}
	for i, r := range s.Runs {
		row := soakRow{N: i + 1, SoakRun: r}
		if r.Dir != "" {
			if rel, err := filepath.Rel(dir, filepath.Join(r.Dir, ReportFile)); err == nil {
				row.Link = filepath.ToSlash(rel)
			}
		}
		row.Failing = firstFailing(r)
		pg.Rows = append(pg.Rows, row)
		pg.Counts[string(r.Verdict)]++
	}
	slices.SortStableFunc(pg.Rows, func(a, b soakRow) int { return verdictRank(a.Verdict) - verdictRank(b.Verdict) })
	if pg.Timeline, err = s.timeline(); err != nil {
		return err
	}
	if err := t.ExecuteTemplate(w, "soak", pg); err != nil {
		return fmt.Errorf("render soak index: %w", err)
	}
	return nil
}

// firstFailing names a run's first failing checker, or why it has none.
func firstFailing(r SoakRun) string {
	if f := r.Checks.Failed(); len(f) > 0 {
		return f[0]
	}
	if r.Error != "" {
		return "harness error"
	}
	return ""
}

// verdictColor colours a run in the soak timeline.
func verdictColor(v check.Status) color.Color {
	switch v {
	case check.Pass:
		return color.NRGBA{46, 125, 50, 255}
	case check.Fail:
		return color.NRGBA{198, 40, 40, 255}
	case check.Inconclusive:
		return color.NRGBA{239, 108, 0, 255}
	}
	return color.NRGBA{74, 20, 140, 255}
}

// timeline draws every run as a bar from its start to its end on the
// soak's clock, one row per run, coloured by verdict.
func (s *Soak) timeline() (Chart, error) {
	p := plot.New()
	p.X.Label.Text = "minutes since the soak started"
	p.Y.Label.Text = "run"
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, float64(len(s.Runs)+1)
	p.X.Min = 0
	for i, r := range s.Runs {
		x0, x1 := r.Start.Minutes(), (r.Start + max(r.Duration, time.Second)).Minutes()
		y := float64(i + 1)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - 0.4}, {X: x1, Y: y - 0.4}, {X: x1, Y: y + 0.4}, {X: x0, Y: y + 0.4}})
		if err != nil {
			return Chart{}, fmt.Errorf("draw soak run %d: %w", i+1, err)
		}
		poly.Color = verdictColor(r.Verdict)
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.X.Max = max(p.X.Max, x1)
	}
	for _, v := range []check.Status{check.Pass, check.Fail, check.Inconclusive, "error"} {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}})
		if err != nil {
			return Chart{}, fmt.Errorf("draw soak legend: %w", err)
		}
		poly.Color = verdictColor(v)
		p.Legend.Add(string(v), poly)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.X.Max *= 1.15 // room for the legend right of the last run
	svg, err := renderSVG(p, 9*vg.Inch, vg.Length(2+0.15*float64(len(s.Runs)))*vg.Inch)
	if err != nil {
		return Chart{}, fmt.Errorf("render soak timeline: %w", err)
	}
	return Chart{ID: "soak-timeline", Title: "soak timeline", SVG: svg}, nil
}

// WriteJUnit writes the soak's junit.xml: one test suite per scenario, one
// test case per checker of each of its runs.
func (s *Soak) WriteJUnit(w io.Writer) error {
	var doc JUnitSuites
	doc.Name = "pdchaos soak " + s.Started.UTC().Format("2006-01-02T15:04:05")
	idx := map[string]int{}
	for _, r := range s.Runs {
		i, ok := idx[r.Scenario]
		if !ok {
			i = len(doc.Suites)
			idx[r.Scenario] = i
			doc.Suites = append(doc.Suites, JUnitSuite{Name: r.Scenario})
		}
		su := &doc.Suites[i]
		class := "pdchaos.soak." + r.Scenario
		for _, c := range r.Checks {
			su.Cases = append(su.Cases, checkCase(class, fmt.Sprintf("%s seed %d", c.Name, r.Seed), c))
		}
		if r.Error != "" || len(r.Checks) == 0 {
			msg := r.Error
			if msg == "" {
				msg = "run has no judgement"
			}
			su.Cases = append(su.Cases, JUnitCase{Name: fmt.Sprintf("run seed %d", r.Seed), Classname: class,
				Time: seconds(r.Duration), Error: &JUnitProblem{Message: msg, Type: "harness-error", Text: msg}})
		}
		su.Properties = append(su.Properties, JUnitProperty{Name: fmt.Sprintf("seed_%d", r.Seed), Value: string(r.Verdict)})
		var f float64
		fmt.Sscanf(su.Time, "%g", &f)
		su.Time = seconds(time.Duration(f*float64(time.Second)) + r.Duration)
	}
	for i := range doc.Suites {
		if doc.Suites[i].Time == "" {
			doc.Suites[i].Time = "0.000"
		}
		doc.Suites[i].count()
	}
	return writeJUnit(w, doc)
}
