package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
)

// Recheck is a stored run judged again with today's checkers: what the run
// directory said then, what its events.jsonl says now, and which checkers
// changed their minds (etcd's stored histories re-checked).
type Recheck struct {
	// Dir is the run directory.
	Dir string
	// Stored is the run's result.json; nil when the directory has none.
	Stored *Result
	// Checks and Verdict are today's judgement ("" verdict: the run ended in
	// a harness error, as JudgeLog says).
	Checks  check.Checks
	Verdict check.Status
	// Changes lists every checker whose status differs from the stored one.
	Changes []CheckChange
	// Notes say what was assumed (no result.json, no repro.yaml).
	Notes []string
}

// CheckChange is one checker whose status moved: Was is "" when the stored
// result did not have the checker, Now is "" when today's checkers lack it.
type CheckChange struct {
	Name    string
	Was     check.Status
	Now     check.Status
	Summary string
}

// ErrNoEvents is returned for a run directory whose events.jsonl holds no
// event: a log with nothing in it cannot be judged.
var ErrNoEvents = errors.New("no event recorded")

// RecheckRun judges dir's events.jsonl again with JudgeLog and the load
// floor of the run's resolved scenario (repro.yaml; the defaults when there
// is none), and compares with dir's result.json. A missing directory or
// events.jsonl, a malformed line (named with its file and number) and an
// unreadable result.json or repro.yaml are errors.
func RecheckRun(dir string) (*Recheck, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("recheck %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("recheck %s: not a run directory", dir)
	}
	rc := &Recheck{Dir: dir}
	evs, err := record.ReadEventsFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("recheck: %w", err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("recheck %s: %w", filepath.Join(dir, "events.jsonl"), ErrNoEvents)
	}
	switch stored, err := ReadResult(dir); {
	case errors.Is(err, fs.ErrNotExist):
		rc.Notes = append(rc.Notes, "no result.json: nothing stored to compare with")
	case err != nil:
		return nil, fmt.Errorf("recheck %s: %w", dir, err)
	default:
		rc.Stored = stored
	}
	var spec CheckSpec
	repro := filepath.Join(dir, "repro.yaml")
	switch b, err := os.ReadFile(repro); {
	case errors.Is(err, fs.ErrNotExist):
		rc.Notes = append(rc.Notes, "no repro.yaml: default load floor")
	case err != nil:
		return nil, fmt.Errorf("recheck: read %s: %w", repro, err)
	default:
		sc, err := ParseScenario(repro, b)
		if err != nil {
			return nil, fmt.Errorf("recheck: %w", err)
		}
		spec = sc.Checks
	}
	rc.Checks, rc.Verdict = JudgeLog(evs, spec)
	if rc.Stored != nil {
		rc.Changes = diffChecks(rc.Stored.Checks, rc.Checks)
	}
	return rc, nil
}

// diffChecks lists the checkers whose status differs, in today's order,
// then the stored checkers that no longer exist.
func diffChecks(was, now check.Checks) []CheckChange {
	var out []CheckChange
	for _, c := range now {
		old, ok := was.Get(c.Name)
		if !ok || old.Status != c.Status {
			out = append(out, CheckChange{Name: c.Name, Was: old.Status, Now: c.Status, Summary: c.Summary})
		}
	}
	for _, c := range was {
		if _, ok := now.Get(c.Name); !ok {
			out = append(out, CheckChange{Name: c.Name, Was: c.Status, Summary: c.Summary})
		}
	}
	return out
}
