package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// Chart is one rendered timeline: its title, what it plots and the SVG
// markup (no XML prolog, ready to inline).
type Chart struct {
	ID    string
	Title string
	Note  string
	SVG   string
}

// series is one named line of (seconds, value) points.
type series struct {
	name string
	xys  plotter.XYs
}

// palette colours lines in a fixed order so charts of one report agree.
func palette(i int) color.Color {
	cs := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
		{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {23, 190, 207, 255}}
	return cs[i%len(cs)]
}

// faultShade fills fault windows; wedgeRed marks wedges.
func faultShade() color.Color { return color.NRGBA{255, 165, 0, 70} }

func wedgeRed() color.Color { return color.RGBA{214, 39, 40, 255} }

// secs is an offset on the run's clock in seconds.
func secs(d time.Duration) float64 { return d.Seconds() }

// roleOf names a metrics source by the role its engine reported in rooms
// snapshots (the rooms source is the engine's base URL, the metrics source
// that URL plus /metrics); otherwise the host:port.
func roleOf(evs []check.Event) func(string) string {
	roles := map[string]string{}
	for _, ev := range evs {
		if ev.Rooms != nil && ev.Rooms.Role != "" {
			roles[ev.Source] = ev.Rooms.Role
		}
	}
	return func(src string) string {
		for base, role := range roles {
			if strings.HasPrefix(src, base) {
				return fmt.Sprintf("%s (%s)", role, hostPort(src))
			}
		}
		return hostPort(src)
	}
}

// hostPort strips a URL to host:port.
func hostPort(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	if i := strings.IndexByte(u, '/'); i >= 0 {
		u = u[:i]
	}
	return u
}

// timelines draws every chart of a run: each PD queue gauge and token usage
// per engine, client requests in flight, outcomes per second and latency
// percentiles, all on the run's clock with fault windows shaded and
// labelled and wedges marked.
func timelines(r *Run) ([]Chart, error) {
	role := roleOf(r.Events)
	end := r.Result.Duration
	gauges := append(contract.SlotGauges(), contract.MetricTokenUsage)
	perGauge := map[string]map[string]plotter.XYs{}
	for _, ev := range r.Events {
		end = max(end, ev.T)
		if ev.Scrape == nil || ev.Scrape.Err != "" {
			continue
		}
		for _, g := range gauges {
			v, ok := ev.Scrape.Gauges[g]
			if !ok {
				continue
			}
			if perGauge[g] == nil {
				perGauge[g] = map[string]plotter.XYs{}
			}
			perGauge[g][role(ev.Source)] = append(perGauge[g][role(ev.Source)], plotter.XY{X: secs(ev.T), Y: v})
		}
	}
	var out []Chart
	for i, g := range gauges {
		var ss []series
		srcs := make([]string, 0, len(perGauge[g]))
		for s := range perGauge[g] {
			srcs = append(srcs, s)
		}
		sort.Strings(srcs)
		for _, s := range srcs {
			ss = append(ss, series{s, perGauge[g][s]})
		}
		var marks []check.Wedge
		for _, w := range r.Result.Wedges {
			if w.Gauge == g {
				marks = append(marks, w)
			}
		}
		c, err := r.chart(fmt.Sprintf("gauge-%d", i), g, "value", end, ss, marks)
		if err != nil {
			return nil, err
		}
		c.Note = gaugeNote(g)
		out = append(out, c)
	}
	var outs []outcome.Outcome
	for _, ev := range r.Events {
		if ev.Outcome != nil {
			outs = append(outs, *ev.Outcome)
		}
	}
	for _, mk := range []func([]outcome.Outcome, time.Duration) (string, string, string, []series){inFlight, perSecond, latency} {
		id, title, unit, ss := mk(outs, end)
		c, err := r.chart(id, title, unit, end, ss, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// gaugeNote says what a gauge is for a reader of the page.
func gaugeNote(g string) string {
	if g == contract.MetricTokenUsage {
		return "KV usage: must return to its baseline after the drain"
	}
	if g == contract.MetricRunning {
		return "running requests: a slot gauge, must return to 0"
	}
	return "PD slot gauge: must return to 0 once idle"
}

// inFlight is the number of client requests started and not yet ended.
func inFlight(outs []outcome.Outcome, end time.Duration) (string, string, string, []series) {
	type step struct {
		t time.Duration
		d int
	}
	var st []step
	for _, o := range outs {
		st = append(st, step{o.Start, 1}, step{o.End, -1})
	}
	slices.SortFunc(st, func(a, b step) int { return int(a.t - b.t) })
	xys := plotter.XYs{{X: 0, Y: 0}}
	n := 0
	for _, s := range st {
		xys = append(xys, plotter.XY{X: secs(s.t), Y: float64(n)})
		n += s.d
		xys = append(xys, plotter.XY{X: secs(s.t), Y: float64(n)})
	}
	xys = append(xys, plotter.XY{X: secs(end), Y: float64(n)})
	return "client-inflight", "client requests in flight", "requests", []series{{"in flight", xys}}
}

// perSecond counts outcomes by kind in one-second buckets of their end.
func perSecond(outs []outcome.Outcome, end time.Duration) (string, string, string, []series) {
	n := int(end/time.Second) + 1
	kinds := []outcome.Kind{outcome.KindCompleted, outcome.KindCancelled, outcome.KindError, outcome.KindHung}
	counts := map[outcome.Kind][]float64{}
	for _, k := range kinds {
		counts[k] = make([]float64, n)
	}
	for _, o := range outs {
		if b := int(o.End / time.Second); b >= 0 && b < n && counts[o.Kind] != nil {
			counts[o.Kind][b]++
		}
	}
	var ss []series
	for _, k := range kinds {
		var xys plotter.XYs
		for i, c := range counts[k] {
			xys = append(xys, plotter.XY{X: float64(i) + 0.5, Y: c})
		}
		ss = append(ss, series{string(k), xys})
	}
	return "outcomes-per-second", "outcomes per second (by end)", "requests/s", ss
}

// latency is TTFT p50/p90/p99 and ITL p99 of completed requests in
// one-second buckets of their end, in milliseconds.
func latency(outs []outcome.Outcome, end time.Duration) (string, string, string, []series) {
	n := int(end/time.Second) + 1
	ttft := make([][]time.Duration, n)
	itl := make([][]time.Duration, n)
	for _, o := range outs {
		b := int(o.End / time.Second)
		if o.Kind != outcome.KindCompleted || b < 0 || b >= n {
			continue
		}
		ttft[b] = append(ttft[b], o.TTFT)
		itl[b] = append(itl[b], o.ITL)
	}
	mk := func(name string, data [][]time.Duration, q float64) series {
		var xys plotter.XYs
		for i, d := range data {
			if len(d) > 0 {
				xys = append(xys, plotter.XY{X: float64(i) + 0.5, Y: float64(Percentile(d, q)) / 1e6})
			}
		}
		return series{name, xys}
	}
	return "latency", "latency percentiles of completed requests (by end)", "ms",
		[]series{mk("TTFT p50", ttft, 0.5), mk("TTFT p90", ttft, 0.9), mk("TTFT p99", ttft, 0.99), mk("ITL p99", itl, 0.99)}
}

// Percentile is the q-quantile (0..1) of ds by nearest rank; 0 when empty.
// It sorts a copy.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// chart draws one timeline: the series as lines, every applied fault window
// as a shaded, labelled band, every wedge as a red dashed line at the moment
// it was flagged, and marks (wedges of this gauge) as red triangles at
// their value.
func (r *Run) chart(id, title, unit string, end time.Duration, ss []series, marks []check.Wedge) (Chart, error) {
	p := plot.New()
	p.Title.Text = "" // the page's caption names the chart
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.Padding = vg.Points(1)
	p.X.Label.Text = "seconds on the run's clock"
	p.Y.Label.Text = unit
	p.X.Min, p.X.Max = 0, secs(end)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	ymax := 1.0
	for _, s := range ss {
		for _, xy := range s.xys {
			ymax = max(ymax, xy.Y)
		}
	}
	for _, m := range marks {
		ymax = max(ymax, m.Value)
	}
	ytop := ymax * 1.45 // headroom for the legend and the fault labels
	p.Y.Min, p.Y.Max = 0, ytop
	for i, f := range r.Result.Faults {
		if !f.Applied {
			continue
		}
		fe := f.End
		if fe == 0 {
			fe = end
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: secs(f.Start), Y: 0}, {X: secs(fe), Y: 0},
			{X: secs(fe), Y: ytop}, {X: secs(f.Start), Y: ytop}})
		if err != nil {
			return Chart{}, fmt.Errorf("draw fault window %d: %w", f.Window, err)
		}
		poly.Color = faultShade()
		poly.LineStyle.Width = 0
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: secs(f.Start), Y: ytop * (0.95 - 0.07*float64(i%4))}},
			Labels: []string{fmt.Sprintf("fault %d: %s", f.Window, f.Fault)}})
		if err != nil {
			return Chart{}, fmt.Errorf("label fault window %d: %w", f.Window, err)
		}
		for i := range lbl.TextStyle {
			lbl.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(poly, lbl)
	}
	for i, s := range ss {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return Chart{}, fmt.Errorf("draw %s %s: %w", title, s.name, err)
		}
		l.Color = palette(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	for i, w := range r.Result.Wedges {
		l, err := plotter.NewLine(plotter.XYs{{X: secs(w.At), Y: 0}, {X: secs(w.At), Y: ytop}})
		if err != nil {
			return Chart{}, fmt.Errorf("draw wedge: %w", err)
		}
		l.Color, l.Dashes, l.Width = wedgeRed(), []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1.2)
		p.Add(l)
		if i == 0 {
			p.Legend.Add("wedge flagged", l)
		}
	}
	if len(marks) > 0 {
		var xys plotter.XYs
		var lbls []string
		for _, m := range marks {
			xys = append(xys, plotter.XY{X: secs(m.At), Y: m.Value})
			lbls = append(lbls, fmt.Sprintf("WEDGE %g", m.Value))
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return Chart{}, fmt.Errorf("draw wedge marks: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: wedgeRed(), Radius: vg.Points(5), Shape: draw.TriangleGlyph{}}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: lbls})
		if err != nil {
			return Chart{}, fmt.Errorf("label wedge marks: %w", err)
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = wedgeRed()
			lb.TextStyle[i].XAlign = draw.XRight
			lb.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(sc, lb)
	}
	svg, err := renderSVG(p, 9*vg.Inch, 3*vg.Inch)
	if err != nil {
		return Chart{}, fmt.Errorf("render %s: %w", title, err)
	}
	return Chart{ID: id, Title: title, SVG: svg}, nil
}

// renderSVG renders p to SVG markup without the XML prolog and doctype
// (the doctype names a remote DTD; inline SVG needs neither).
func renderSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}
