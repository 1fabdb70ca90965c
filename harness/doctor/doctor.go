package doctor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/harness/record"
	"github.com/pdchaos/pdchaos/harness/target"
)

// Severity grades one finding.
type Severity int

// Severities, mildest first. Reduced and Unusable are problems: they set
// the exit code.
const (
	// OK is something that applies as it should.
	OK Severity = iota
	// Info is context: what was found, or a layer that does not apply.
	Info
	// Reduced means the target is usable, but some check is weaker or
	// skipped.
	Reduced
	// Unusable means a run against the target would prove nothing.
	Unusable
)

// String is the label printed before each finding.
func (s Severity) String() string {
	return [...]string{"ok", "info", "REDUCED", "UNUSABLE"}[s]
}

// Exit codes of `pdchaos doctor`.
const (
	ExitOK       = 0
	ExitReduced  = 2
	ExitUnusable = 3
)

// Finding is one line of the report.
type Finding struct {
	Severity Severity `json:"severity"`
	Text     string   `json:"text"`
}

// Report is everything doctor found, in the order it looked.
type Report struct {
	Findings []Finding `json:"findings"`
}

func (r *Report) add(s Severity, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Severity: s, Text: fmt.Sprintf(format, args...)})
}

// Worst is the gravest severity found.
func (r Report) Worst() Severity {
	w := OK
	for _, f := range r.Findings {
		w = max(w, f.Severity)
	}
	return w
}

// ExitCode is 3 with any unusable finding, 2 with any reduced one, else 0.
func (r Report) ExitCode() int {
	switch r.Worst() {
	case Unusable:
		return ExitUnusable
	case Reduced:
		return ExitReduced
	}
	return ExitOK
}

// Problems are the reduced and unusable findings, one line each.
func (r Report) Problems() []string {
	var out []string
	for _, f := range r.Findings {
		if f.Severity >= Reduced {
			out = append(out, f.Text)
		}
	}
	return out
}

// gravest is the first finding of the worst severity.
func (r Report) gravest() string {
	w := r.Worst()
	for _, f := range r.Findings {
		if f.Severity == w {
			return f.Text
		}
	}
	return ""
}

// Print writes one line per finding and a closing verdict.
func (r Report) Print(w io.Writer) {
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%-8s %s\n", f.Severity, f.Text)
	}
	// The closing line names the gravest problem, so it alone says why.
	switch r.ExitCode() {
	case ExitUnusable:
		fmt.Fprintf(w, "doctor: target unusable (%d problem(s), the gravest: %s); exit 3\n", len(r.Problems()), r.gravest())
	case ExitReduced:
		fmt.Fprintf(w, "doctor: usable with reduced checks (%d problem(s), the gravest: %s); exit 2\n", len(r.Problems()), r.gravest())
	default:
		fmt.Fprintln(w, "doctor: every check and the listed fault layers apply; exit 0")
	}
}

// Options are what doctor knows beyond the target.
type Options struct {
	// AnswersUnchecked is set when answers will not be compared with the
	// fake model (an external deployment serving a real model).
	AnswersUnchecked bool
	// InProcess says the target's goroutines live in this process (no-leaks
	// can count them).
	InProcess bool
}

// Run examines t and returns the report. It sends no load.
func Run(ctx context.Context, t target.Target, o Options) Report {
	var r Report
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	hctx, cancel := context.WithTimeout(ctx, target.HealthTimeout+5*time.Second)
	health := target.ProbeHealth(hctx, t.Endpoint(), target.EngineBases(t))
	cancel()
	for _, p := range health {
		switch {
		case p.Err != "":
			r.add(Unusable, "health %s: %s %s", p.Role, p.Path, p.Err)
		case p.Fallback != "" && p.Role == "router":
			r.add(Reduced, "health router: %s 200, but %s; readiness of prefill and decode is not known to the router", p.Path, p.Fallback)
		case p.Fallback != "":
			r.add(Info, "health %s: %s 200 (%s)", p.Role, p.Path, p.Fallback)
		default:
			r.add(OK, "health %s: %s 200", p.Role, p.Path)
		}
	}

	metricsOK := true
	for _, u := range t.MetricsURLs() {
		base := strings.TrimSuffix(strings.TrimRight(u, "/"), contract.PathMetrics)
		info := serverInfo(ctx, client, base)
		if info.err == "" {
			r.add(Info, "version %s: %s (from %s, disaggregation_mode %q)", base, orUnknown(info.Version), info.path, info.Mode)
		} else {
			r.add(Info, "version %s: unknown (%s)", base, info.err)
		}
		if !scrapeFindings(ctx, &r, client, u, info.Mode) {
			metricsOK = false
		}
	}

	gaugeFindings(ctx, &r, client, t.MetricsURLs())

	// Checks, in judging order.
	if len(t.EngineURLs()) == 0 {
		r.add(Reduced, "check %s: skipped: needs /debug/rooms on each engine (--engine-url), which SGLang does not serve", contract.CheckRoomsTerminal)
	} else {
		var bad []string
		for _, e := range t.EngineURLs() {
			// Decoded as the recorder will, within its limit.
			if _, err := record.RoomsOnce(ctx, client, e); err != nil {
				bad = append(bad, err.Error())
			}
		}
		if len(bad) > 0 {
			r.add(Reduced, "check %s: reduced: %s", contract.CheckRoomsTerminal, strings.Join(bad, "; "))
		} else {
			r.add(OK, "check %s: applies (/debug/rooms on %s)", contract.CheckRoomsTerminal, strings.Join(t.EngineURLs(), ", "))
		}
	}
	if metricsOK {
		r.add(OK, "check %s: applies (every engine exports the gauges it needs)", contract.CheckSlotsReleased)
	} else {
		// The problem is already one line per engine above; this is context.
		r.add(Info, "check %s: reduced for the engines above: what is absent is inconclusive, not zero", contract.CheckSlotsReleased)
	}
	for _, c := range []string{contract.CheckLiveness, contract.CheckClientOutcomes} {
		r.add(OK, "check %s: applies", c)
	}
	if o.AnswersUnchecked {
		r.add(Reduced, "check %s: reduced: answers are not compared with pdchaos's fake model (a real model; --check-answers for the bundled engine)", contract.CheckIntegrity)
	} else {
		r.add(OK, "check %s: applies", contract.CheckIntegrity)
	}
	if o.InProcess {
		r.add(OK, "check %s: applies", contract.CheckNoLeaks)
	} else {
		r.add(Info, "check %s: skipped: the target's goroutines live in other processes (a harness self-check)", contract.CheckNoLeaks)
	}
	for _, c := range []string{contract.CheckFaultsVerified, contract.CheckLoadFloor} {
		r.add(OK, "check %s: applies", c)
	}

	layerFindings(ctx, &r, t)
	return r
}

// gaugeFindings says when the engines set their queue gauges and how run
// and watch will judge them (record.DetectGauges, as they decide it): live
// gauges as scraped; logged ones by live loads where every engine serves
// them, else with windows widened past the idle refresh.
func gaugeFindings(ctx context.Context, r *Report, c *http.Client, metricsURLs []string) {
	if len(metricsURLs) == 0 {
		return
	}
	src := record.DetectGauges(ctx, c, metricsURLs)
	what := fmt.Sprintf("gauges %s (%s)", src.Mode, src.ModeFrom)
	switch {
	case src.Mode != contract.GaugesLogged:
		r.add(OK, "%s: judged as scraped", what)
	case src.LiveLoads:
		r.add(OK, "%s, idle refresh %v; live loads: %s, so the scenario's windows apply", what, src.IdleRefresh, src.LoadsWhy)
	default:
		stale := src.StaleFor(record.DefaultInterval)
		r.add(Info, "%s, idle refresh %v; live loads: %s: a healthy engine can show a queue for up to %v after traffic stops, so run and watch widen their wedge window and drain deadline to at least %v and see wedges that much later (serve GET %s?%s to judge queues live)",
			what, src.IdleRefresh, src.LoadsWhy, src.IdleRefresh, stale, contract.PathLoads, contract.LoadsQueryDisagg)
	}
}

// layerFindings says which fault layers apply and why not.
func layerFindings(_ context.Context, r *Report, t target.Target) {
	have := target.Layers(t)
	why := map[faults.Layer]string{
		faults.LayerNetwork:  "the target lists no links a proxy can front (an external target needs the prefill's bootstrap URL to interpose its links; role processes keep their link table inside)",
		faults.LayerProtocol: "no ZMQ control link to interpose (protocol faults need a bootstrap URL: the prefill's bootstrap server)",
		faults.LayerEngine:   "no /debug/hooks (engine hooks exist only in the bundled engine: --debug-hooks with --engine-url)",
		faults.LayerProcess:  "no role processes (--target procs, or --proc ROLE=PATTERN on an external target on this host)",
	}
	for _, l := range []faults.Layer{faults.LayerClient, faults.LayerNetwork, faults.LayerProtocol, faults.LayerEngine, faults.LayerProcess} {
		if !slices.Contains(have, l) {
			r.add(Info, "fault layer %s: does not apply: %s", l, why[l])
			continue
		}
		if l != faults.LayerProcess {
			r.add(OK, "fault layer %s: applies", l)
			continue
		}
		procs, _ := t.Processes()
		for _, role := range procs.Roles() {
			pid, err := procs.PID(role)
			if err != nil {
				r.add(Unusable, "fault layer process: role %s: %v", role, err)
				continue
			}
			tree := process.Tree(pid)
			r.add(OK, "fault layer process: role %s: pid %d, a tree of %d process(es): sigstop freezes all of them", role, pid, len(tree))
			if rc, ok := procs.(process.RestartChecker); ok {
				if err := rc.CanRestart(role); err != nil {
					r.add(Info, "fault layer process: role %s: sigkill refused: %v", role, err)
				}
			}
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
