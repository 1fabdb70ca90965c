package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
)

// Exit codes: 0 pass, 1 invariant violated, 2 inconclusive, 3 harness error.
const (
	ExitPass         = 0
	ExitViolation    = 1
	ExitInconclusive = 2
	ExitHarness      = 3
)

// Result is result.json: the verdict first, then what it rests on.
type Result struct {
	Verdict      check.Status `json:"verdict"`
	ExitCode     int          `json:"exit_code"`
	FirstFailure string       `json:"first_failure,omitempty"`
	Scenario     string       `json:"scenario"`
	Seed         uint64       `json:"seed"`
	Target       string       `json:"target"`
	Regressions  []string     `json:"regressions,omitempty"`
	RunDir       string       `json:"run_dir"`
	Repro        string       `json:"repro"`
	// Args are the target flags the run was given (see RunOptions.TargetArgs).
	Args []string `json:"args,omitempty"`
	// Versions name what ran: pdchaos's module version and VCS revision,
	// and the Go toolchain.
	Versions     map[string]string `json:"versions,omitempty"`
	Started      time.Time         `json:"started"`
	Duration     time.Duration     `json:"duration"`
	Interrupted  bool              `json:"interrupted,omitempty"`
	HarnessError string            `json:"harness_error,omitempty"`
	Checks       check.Checks      `json:"checks"`
	Phases       []PhaseStats      `json:"phases,omitempty"`
	Faults       []schedule.Record `json:"faults,omitempty"`
	Wedges       []check.Wedge     `json:"wedges,omitempty"`
	Drain        *check.Drain      `json:"drain,omitempty"`
	Agents       agents.Stats      `json:"agents"`
	// Probes are the engine's code probe hits at the end of the run, every
	// role's summed, by probe name (zero ones too; `pdchaos probes` lists
	// them); empty when no role serves /debug/probes.
	Probes map[string]int64 `json:"probes,omitempty"`
	// ReportError says why report.html or junit.xml could not be written
	// (the verdict stands; `pdchaos report RUN_DIR` renders them again).
	ReportError string `json:"report_error,omitempty"`
	// Health is the target's health when the run began, with the endpoint
	// used per role (router /readiness or /health, engine /health_generate
	// or /health).
	Health target.HealthReport `json:"health,omitempty"`
	// Gauges is how the run read the engines' gauges and the windows it
	// used, with why (nil in results written before it existed).
	Gauges *GaugeTiming `json:"gauges,omitempty"`
}

// UnhitProbes lists, in table order, the code probes that no run of
// results hit: what the gate fails on (less the probes it lists as
// unreachable today).
func UnhitProbes(results ...*Result) []contract.Probe {
	runs := make([]map[string]int64, 0, len(results))
	for _, r := range results {
		if r != nil {
			runs = append(runs, r.Probes)
		}
	}
	return contract.UnhitProbes(runs...)
}

// PhaseStats are client figures for one phase of the run (etcd's
// per-fault-phase stats): requests by the phase they started in.
type PhaseStats struct {
	Name      string        `json:"name"`
	Start     time.Duration `json:"start"`
	End       time.Duration `json:"end"`
	Requests  int           `json:"requests"`
	Completed int           `json:"completed"`
	Cancelled int           `json:"cancelled"`
	Errors    int           `json:"errors"`
	Hung      int           `json:"hung"`
	TTFTp50   time.Duration `json:"ttft_p50"`
	TTFTp99   time.Duration `json:"ttft_p99"`
}

// phaseStats splits outcomes into the given [start, end) phases.
func phaseStats(outs []outcome.Outcome, phases []PhaseStats) []PhaseStats {
	for i := range phases {
		p := &phases[i]
		var ttft []time.Duration
		for _, o := range outs {
			if o.Start < p.Start || o.Start >= p.End {
				continue
			}
			p.Requests++
			switch o.Kind {
			case outcome.KindCompleted:
				p.Completed++
				ttft = append(ttft, o.TTFT)
			case outcome.KindCancelled:
				p.Cancelled++
			case outcome.KindError:
				p.Errors++
			case outcome.KindHung:
				p.Hung++
			}
		}
		slices.Sort(ttft)
		if n := len(ttft); n > 0 {
			p.TTFTp50, p.TTFTp99 = ttft[n/2], ttft[min(n-1, n*99/100)]
		}
	}
	return phases
}

// ExitCodeFor maps a verdict onto the process exit code.
func ExitCodeFor(v check.Status) int {
	switch v {
	case check.Pass:
		return ExitPass
	case check.Fail:
		return ExitViolation
	case check.Inconclusive:
		return ExitInconclusive
	}
	return ExitHarness
}

// Err is nil on pass, else an error naming the first failure or the reason.
func (r *Result) Err() error {
	switch {
	case r.HarnessError != "":
		return fmt.Errorf("harness error: %s", r.HarnessError)
	case r.Verdict == check.Fail:
		return r.Checks
	case r.Verdict == check.Inconclusive:
		var why []string
		for _, c := range r.Checks {
			if c.Status == check.Inconclusive {
				why = append(why, c.Name+": "+c.Summary)
			}
		}
		if r.Interrupted {
			why = append([]string{"interrupted"}, why...)
		}
		return fmt.Errorf("inconclusive: %s", strings.Join(why, "; "))
	}
	return nil
}

// WriteJSON writes result.json into the run directory.
func (r *Result) WriteJSON() error {
	if r.RunDir == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.RunDir, "result.json"), b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// ReadResult reads a run directory's result.json.
func ReadResult(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode result %s: %w", dir, err)
	}
	return &r, nil
}

// PrintTable writes the verdict table: one line per check, then stuck rooms
// and wedges of failures, then where the results are.
func (r *Result) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "scenario %s  seed %d  target %s  %v\n", r.Scenario, r.Seed, r.Target, r.Duration.Round(time.Millisecond))
	if len(r.Health) > 0 {
		fmt.Fprintf(w, "health: %s\n", r.Health)
	}
	if r.Gauges != nil {
		fmt.Fprintf(w, "%s\n", r.Gauges)
	}
	if r.HarnessError != "" {
		fmt.Fprintf(w, "harness error: %s\n", r.HarnessError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, strings.ToUpper(string(c.Status)), c.Summary)
	}
	_ = tw.Flush()
	for _, c := range r.Checks {
		if c.Status != check.Fail {
			continue
		}
		for i, s := range c.Stuck {
			if i == 3 {
				fmt.Fprintf(w, "    … %d more stuck rooms in result.json\n", len(c.Stuck)-3)
				break
			}
			fmt.Fprintf(w, "    [%s] room %d on %s: %s since %v, faults active: %v\n", c.Name, s.Room, s.Role, s.State,
				s.Since.Round(time.Millisecond), s.ActiveFaults)
			for _, e := range s.Events {
				fmt.Fprintf(w, "        %s rank %d %-10s %-16s %s\n", e.Side, e.Rank, e.Kind, e.State, e.Detail)
			}
		}
	}
	for _, wd := range r.Wedges {
		fmt.Fprintf(w, "  %s\n", wd)
	}
	verdict := strings.ToUpper(string(r.Verdict))
	if r.Interrupted {
		verdict += " (interrupted)"
	}
	fmt.Fprintf(w, "verdict: %s (exit %d)\n", verdict, r.ExitCode)
	if r.RunDir != "" {
		fmt.Fprintf(w, "results: %s\n", r.RunDir)
	}
	if r.RunDir != "" && r.ReportError == "" {
		fmt.Fprintf(w, "report:  %s\n", filepath.Join(r.RunDir, "report.html"))
	}
	if r.ReportError != "" {
		fmt.Fprintf(w, "report error: %s\n", r.ReportError)
	}
	if r.Repro != "" {
		fmt.Fprintf(w, "repro:   %s\n", r.Repro)
	}
}
