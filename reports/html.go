package reports

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

//go:embed page.tmpl soak.tmpl style.css
var templatesFS embed.FS

// maxStuckShown bounds the stuck rooms whose histories a page shows; the
// rest are counted (result.json has them all).
const maxStuckShown = 12

// page is what page.tmpl renders.
type page struct {
	R          *RunResult
	Verdict    string
	Style      template.CSS
	Charts     []Chart
	Violations []violation
	Stuck      []roomHistory
	StuckMore  int
	Outcomes   outcomeTable
	Probes     template.HTML
	Generated  time.Time
}

// violation is one row of the violations table.
type violation struct {
	Check, What, Where, Since, Faults string
}

// roomHistory is one stuck room's events, prefill and decode side by side.
type roomHistory struct {
	Check, Room, Role, State, Since, Faults string
	Rows                                    []historyRow
}

// historyRow is one event in the prefill or the decode column.
type historyRow struct {
	At              string
	Prefill, Decode string
}

// outcomeTable is the agent outcome table.
type outcomeTable struct {
	A                                    AgentStats
	Requests, Completed, CancelledQueued int
	CancelledDecode, Errors, Hung        int
	Lat                                  []latRow
	Phases                               []Phase
}

// latRow is one latency metric's percentiles.
type latRow struct {
	Name          string
	N             int
	P50, P90, P99 string
}

// templates parses the embedded templates with the page helpers.
func templates() (*template.Template, error) {
	t, err := template.New("page.tmpl").Funcs(template.FuncMap{
		"dur":   func(d time.Duration) string { return fmtDur(d) },
		"upper": strings.ToUpper,
		"svg":   func(s string) template.HTML { return template.HTML(s) }, //nolint:gosec // our own gonum SVG
		"evidence": func(m map[string]int64) string {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
			}
			return strings.Join(parts, " ")
		},
		"lower": func(s check.Status) string { return strings.ToLower(string(s)) },
	}).ParseFS(templatesFS, "page.tmpl", "soak.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse report templates: %w", err)
	}
	return t, nil
}

// fmtDur rounds a duration for a table.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// style is the page's inline CSS.
func style() (template.CSS, error) {
	b, err := templatesFS.ReadFile("style.css")
	if err != nil {
		return "", fmt.Errorf("read report style: %w", err)
	}
	return template.CSS(b), nil //nolint:gosec // our own stylesheet
}

// WriteHTML renders report.html: the verdict, seed, target and versions at
// the top, one line per checker with its evidence, the timelines, the
// violations, each stuck room's history, the outcome table and, when the
// run recorded it, probe coverage. Everything is inline.
func (r *Run) WriteHTML(w io.Writer) error {
	t, err := templates()
	if err != nil {
		return err
	}
	css, err := style()
	if err != nil {
		return err
	}
	charts, err := timelines(r)
	if err != nil {
		return fmt.Errorf("render report for %s: %w", r.Dir, err)
	}
	pg := page{R: r.Result, Style: css, Charts: charts, Outcomes: r.outcomeTable()}
	pg.Verdict = strings.ToUpper(string(r.Result.Verdict))
	switch {
	case r.Result.Verdict == "" && r.Result.HarnessError != "":
		pg.Verdict = "ERROR"
	case r.Result.Verdict == "":
		pg.Verdict = "UNFINISHED"
	}
	pg.Violations = violations(r.Result)
	pg.Stuck, pg.StuckMore = r.stuckHistories()
	if len(r.Result.Probes) > 0 && string(r.Result.Probes) != "null" {
		var v any
		if err := json.Unmarshal(r.Result.Probes, &v); err != nil {
			return fmt.Errorf("render probes of %s: %w", r.Dir, err)
		}
		pg.Probes = jsonHTML(v)
	}
	if err := t.ExecuteTemplate(w, "page.tmpl", pg); err != nil {
		return fmt.Errorf("render report for %s: %w", r.Dir, err)
	}
	return nil
}

// WriteFile writes one rendered file into the run directory through a
// temporary file, so a reader never sees half a report.
func (r *Run) WriteFile(name string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.Dir, name), b.Bytes())
}

// writeAtomic writes data to path through a temporary file in its directory.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// violations lists every failing check's findings: its stuck rooms and
// details, or its summary alone.
func violations(res *RunResult) []violation {
	var out []violation
	for _, c := range res.Checks {
		if c.Status != check.Fail {
			continue
		}
		n := 0
		for _, s := range c.Stuck {
			out = append(out, violation{Check: c.Name, What: fmt.Sprintf("room %d %s", s.Room, s.State),
				Where: s.Role + " " + hostPort(s.Source), Since: fmtDur(s.Since), Faults: strings.Join(s.ActiveFaults, ", ")})
			n++
		}
		for _, d := range c.Details {
			out = append(out, violation{Check: c.Name, What: d})
			n++
		}
		for _, w := range res.Wedges {
			if c.Name == contract.CheckSlotsReleased {
				out = append(out, violation{Check: c.Name, What: fmt.Sprintf("WEDGE %s = %g", w.Gauge, w.Value),
					Where: hostPort(w.Source), Since: fmtDur(w.Since), Faults: "flagged at " + fmtDur(w.At)})
				n++
			}
		}
		if n == 0 {
			out = append(out, violation{Check: c.Name, What: c.Summary})
		}
	}
	return out
}

// stuckHistories gathers each stuck room's events from both engines: the
// check's own history and every final rooms snapshot holding that room,
// merged in time order on the run's clock.
func (r *Run) stuckHistories() ([]roomHistory, int) {
	var base time.Time
	byRoom := map[uint64][]contract.Event{}
	for _, ev := range r.Events {
		if ev.Run != nil {
			base = ev.Run.BaseWall
		}
		if ev.Rooms == nil || !ev.Rooms.Final {
			continue
		}
		for _, h := range append(slices.Clone(ev.Rooms.Held), ev.Rooms.PeerCleared...) {
			byRoom[h.Room] = append(byRoom[h.Room], h.Events...)
		}
	}
	var out []roomHistory
	seen := map[uint64]bool{}
	total := 0
	for _, c := range r.Result.Checks {
		for _, s := range c.Stuck {
			if seen[s.Room] {
				continue
			}
			seen[s.Room] = true
			total++
			if len(out) >= maxStuckShown {
				continue
			}
			evs := append(slices.Clone(s.Events), byRoom[s.Room]...)
			slices.SortStableFunc(evs, func(a, b contract.Event) int { return a.At.Compare(b.At) })
			h := roomHistory{Check: c.Name, Room: fmt.Sprint(s.Room), Role: s.Role, State: s.State,
				Since: fmtDur(s.Since), Faults: strings.Join(s.ActiveFaults, ", ")}
			dup := map[string]bool{}
			for _, e := range evs {
				key := fmt.Sprint(e.At.UnixNano(), e.Side, e.Rank, e.Kind, e.State, e.Detail)
				if dup[key] {
					continue
				}
				dup[key] = true
				at := e.At.Format("15:04:05.000")
				if !base.IsZero() {
					at = fmtDur(e.At.Sub(base))
				}
				cell := fmt.Sprintf("rank %d %s → %s %s", e.Rank, e.Kind, e.State, e.Detail)
				row := historyRow{At: at}
				if e.Side == "prefill" {
					row.Prefill = cell
				} else {
					row.Decode = cell
				}
				h.Rows = append(h.Rows, row)
			}
			out = append(out, h)
		}
	}
	return out, total - len(out)
}

// outcomeTable counts request outcomes from the log and computes TTFT and
// ITL percentiles of completed requests.
func (r *Run) outcomeTable() outcomeTable {
	t := outcomeTable{A: r.Result.Agents, Phases: r.Result.Phases}
	var ttft, itl, maxITL []time.Duration
	for _, ev := range r.Events {
		o := ev.Outcome
		if o == nil {
			continue
		}
		t.Requests++
		switch o.Kind {
		case outcome.KindCompleted:
			t.Completed++
			ttft = append(ttft, o.TTFT)
			itl = append(itl, o.ITL)
			maxITL = append(maxITL, o.MaxITL)
		case outcome.KindCancelled:
			if o.Phase == outcome.PhaseDecode {
				t.CancelledDecode++
			} else {
				t.CancelledQueued++
			}
		case outcome.KindError:
			t.Errors++
		case outcome.KindHung:
			t.Hung++
		}
	}
	for _, l := range []struct {
		name string
		ds   []time.Duration
	}{{"TTFT", ttft}, {"ITL (mean per request)", itl}, {"ITL (max per request)", maxITL}} {
		t.Lat = append(t.Lat, latRow{Name: l.name, N: len(l.ds), P50: fmtDur(Percentile(l.ds, 0.5)),
			P90: fmtDur(Percentile(l.ds, 0.9)), P99: fmtDur(Percentile(l.ds, 0.99))})
	}
	return t
}

// jsonHTML renders decoded JSON as nested tables (objects) and lists
// (arrays), escaping every string: the probes section's shape belongs to
// the engine, so the page shows whatever it holds.
func jsonHTML(v any) template.HTML {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteString(`<table class="kv">`)
			for _, k := range keys {
				b.WriteString("<tr><th>" + template.HTMLEscapeString(k) + "</th><td>")
				walk(x[k])
				b.WriteString("</td></tr>")
			}
			b.WriteString("</table>")
		case []any:
			b.WriteString("<ol>")
			for _, e := range x {
				b.WriteString("<li>")
				walk(e)
				b.WriteString("</li>")
			}
			b.WriteString("</ol>")
		default:
			b.WriteString(template.HTMLEscapeString(fmt.Sprint(x)))
		}
	}
	walk(v)
	return template.HTML(b.String()) //nolint:gosec // every leaf is escaped above
}
