package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/harness/check"
)

// File names in a run directory.
const (
	ResultFile = "result.json"
	EventsFile = "events.jsonl"
	ReproFile  = "repro.yaml"
	ReportFile = "report.html"
	JUnitFile  = "junit.xml"
)

// RunResult is the part of result.json a report shows. It mirrors the
// harness's Result field by field (same JSON names) so reports need not
// import the harness; fields it does not know are ignored.
type RunResult struct {
	Verdict      check.Status      `json:"verdict"`
	ExitCode     int               `json:"exit_code"`
	FirstFailure string            `json:"first_failure,omitempty"`
	Scenario     string            `json:"scenario"`
	Seed         uint64            `json:"seed"`
	Target       string            `json:"target"`
	Regressions  []string          `json:"regressions,omitempty"`
	RunDir       string            `json:"run_dir"`
	Repro        string            `json:"repro"`
	Args         []string          `json:"args,omitempty"`
	Versions     map[string]string `json:"versions,omitempty"`
	Started      time.Time         `json:"started"`
	Duration     time.Duration     `json:"duration"`
	Interrupted  bool              `json:"interrupted,omitempty"`
	HarnessError string            `json:"harness_error,omitempty"`
	Checks       check.Checks      `json:"checks"`
	Phases       []Phase           `json:"phases,omitempty"`
	Faults       []schedule.Record `json:"faults,omitempty"`
	Wedges       []check.Wedge     `json:"wedges,omitempty"`
	Drain        *check.Drain      `json:"drain,omitempty"`
	Agents       AgentStats        `json:"agents"`
	// Probes is code-probe coverage, when the run recorded it; its shape
	// belongs to the engine's probes, so it is kept raw and shown as found.
	Probes json.RawMessage `json:"probes,omitempty"`
}

// Phase is one phase's client figures (the harness's PhaseStats).
type Phase struct {
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

// AgentStats are the swarm's end counters (agents.Stats, by JSON name).
type AgentStats struct {
	Started         int64 `json:"started"`
	InFlight        int64 `json:"in_flight"`
	Completed       int64 `json:"completed"`
	CancelledQueued int64 `json:"cancelled_queued"`
	CancelledDecode int64 `json:"cancelled_decode"`
	Errors          int64 `json:"errors"`
	Hung            int64 `json:"hung"`
	Kills           int64 `json:"kills"`
	KillAlls        int64 `json:"kill_alls"`
	Restarts        int64 `json:"restarts"`
	Integrity       int64 `json:"integrity_violations"`
}

// Run is a loaded run directory: its result (nil when result.json is
// missing, e.g. a killed run), its event log and its repro.yaml text.
type Run struct {
	Dir    string
	Result *RunResult
	Events []check.Event
	Repro  []byte
}

// Load reads a run directory. events.jsonl is required; result.json and
// repro.yaml are optional (a killed run may lack the first).
func Load(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", dir, err)
	}
	defer f.Close()
	if r.Events, err = check.ReadEvents(f); err != nil {
		return nil, fmt.Errorf("load run %s: %s: %w", dir, EventsFile, err)
	}
	switch b, err := os.ReadFile(filepath.Join(dir, ResultFile)); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("load run %s: %w", dir, err)
	default:
		var res RunResult
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, fmt.Errorf("load run %s: decode %s: %w", dir, ResultFile, err)
		}
		r.Result = &res
	}
	switch b, err := os.ReadFile(filepath.Join(dir, ReproFile)); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("load run %s: %w", dir, err)
	default:
		r.Repro = b
	}
	if r.Result == nil {
		r.Result = r.resultFromEvents()
	}
	return r, nil
}

// resultFromEvents is what a run without result.json can still say: what ran
// (the run event) and its faults and wedges; the verdict stays empty.
func (r *Run) resultFromEvents() *RunResult {
	res := &RunResult{RunDir: r.Dir}
	v := check.NewView(r.Events)
	res.Faults, res.Wedges, res.Drain = v.Faults, v.Wedges, v.Drain
	for _, ev := range r.Events {
		if ev.Run != nil {
			res.Scenario, res.Seed, res.Target, res.Started = ev.Run.Scenario, ev.Run.Seed, ev.Run.Target, ev.Run.BaseWall
		}
		res.Duration = max(res.Duration, ev.T)
	}
	return res
}

// WriteAll renders report.html and junit.xml into the run directory.
func (r *Run) WriteAll() error {
	if err := r.WriteFile(ReportFile, r.WriteHTML); err != nil {
		return err
	}
	return r.WriteFile(JUnitFile, r.WriteJUnit)
}

// RenderDir loads a run directory and writes its report.html and junit.xml.
func RenderDir(dir string) error {
	r, err := Load(dir)
	if err != nil {
		return err
	}
	return r.WriteAll()
}
