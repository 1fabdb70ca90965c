package mutate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Counts are a report's figures: mutants by verdict, catches by checker.
type Counts struct {
	ByVerdict map[Verdict]int
	ByChecker map[string]int
}

// Count tallies the outcomes.
func (r *Report) Count() Counts {
	c := Counts{ByVerdict: map[Verdict]int{}, ByChecker: map[string]int{}}
	for _, o := range r.Outcomes {
		c.ByVerdict[o.Verdict]++
		if o.Verdict == Caught {
			c.ByChecker[o.Checker]++
		}
	}
	return c
}

// Summary is the one-paragraph result: caught N, missed M, not reached K,
// then the catches by checker.
func (r *Report) Summary() string {
	c := r.Count()
	var b strings.Builder
	fmt.Fprintf(&b, "mutants: %d; caught %d, missed %d, not reached %d, inconclusive %d, no build %d (not counted)\n",
		len(r.Outcomes), c.ByVerdict[Caught], c.ByVerdict[Missed], c.ByVerdict[NotReached], c.ByVerdict[Inconclusive], c.ByVerdict[NoBuild])
	if n := c.ByVerdict[StillCaught]; n > 0 {
		fmt.Fprintf(&b, "and %d break a regression's own branch and leave the regression caught by its checker (the fixed engine never runs them)\n", n)
	}
	if n := r.regressionOnly(); n > 0 {
		fmt.Fprintf(&b, "of the not reached, %d break a regression's own branch (run only with that regression on, never on the fixed engine)\n", n)
	}
	if r.SimSeeds > 0 {
		fmt.Fprintf(&b, "screened in the simulator: seeds %d..%d of each preset run; %d mutants of the I/O layer left out (the simulator runs %s only)\n",
			r.Seed, r.Seed+uint64(r.SimSeeds)-1, r.NotSimulated, SimulatedDir)
	}
	var names []string
	for n := range c.ByChecker {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("caught by checker:")
	for _, n := range names {
		fmt.Fprintf(&b, " %s %d;", n, c.ByChecker[n])
	}
	b.WriteString("\n")
	return b.String()
}

// WriteMarkdown writes mutants.md: the summary, then one row per mutant
// (probe, place, kind, verdict, checker, preset), then the misses with the
// statements each mutant dropped.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if r.SimSeeds > 0 {
		fmt.Fprintf(&b, "# Mutation screen in the simulator (seeds %d..%d)\n\n```\n%s```\n\n", r.Seed, r.Seed+uint64(r.SimSeeds)-1, r.Summary())
	} else {
		fmt.Fprintf(&b, "# Gate mutation self-test (seed %d)\n\n```\n%s```\n\n", r.Seed, r.Summary())
	}
	b.WriteString("| probe | place | kind | verdict | checker | preset |\n|---|---|---|---|---|---|\n")
	for _, o := range r.Outcomes {
		probe := o.Probe
		if len(o.Also) > 0 {
			probe += " (+" + strings.Join(o.Also, ", ") + ")"
		}
		checker := o.Checker
		if n := len(o.Runs); o.Verdict == Caught && n > 0 && len(o.Runs[n-1].Failed) > 1 {
			// The first failing checker in the judge's order counts; the
			// others that failed in the same run are shown beside it.
			checker += " (also " + strings.Join(o.Runs[n-1].Failed[1:], ", ") + ")"
		}
		if o.Verdict == Caught && r.failsUnmutated(o.Preset, o.Checker) {
			checker += " **(not passing unmutated either at this seed: suspect)**"
		}
		preset := o.Preset
		if reg := r.regressionOf(o.Probe); o.Verdict == NotReached && preset == "" && reg != "" {
			preset = "(a branch of regression " + reg + " only; not built)"
		} else if o.Verdict == NotReached && preset == "" {
			preset = "(no coverage run hit it; not built)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", probe, o.Place(), o.Kind, o.Verdict, checker, preset)
	}
	var misses []Outcome
	for _, o := range r.Outcomes {
		if o.Verdict == Missed || o.Verdict == NotReached || o.Verdict == Inconclusive || o.Verdict == StillCaught {
			misses = append(misses, o)
		}
	}
	if len(misses) > 0 {
		b.WriteString("\n## Not caught: what each mutant dropped\n\n")
		for _, o := range misses {
			fmt.Fprintf(&b, "- `%s` %s %s (%s): dropped `%s`\n", o.Probe, o.Place(), o.Kind, o.Verdict, strings.Join(o.Dropped, "; "))
		}
	}
	if len(r.CoverageFailures) > 0 {
		b.WriteString("\n## Coverage runs that failed on the unmutated engine\n\n")
		for _, f := range r.CoverageFailures {
			fmt.Fprintf(&b, "- %s: exit %d, not passing: %s %s\n", f.Preset, f.ExitCode, strings.Join(f.NotPassed, ", "), f.FirstFailure)
		}
	}
	if len(r.ObserveOnly) > 0 {
		b.WriteString("\n## Probe sites with no mutant (the Hit is the last statement of its block)\n\n")
		for _, s := range r.ObserveOnly {
			fmt.Fprintf(&b, "- `%s` %s:%d\n", s.Probe, s.File, s.Line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// failsUnmutated reports whether checker did not pass in preset's
// coverage run on the unmutated engine.
func (r *Report) failsUnmutated(preset, checker string) bool {
	for _, f := range r.CoverageFailures {
		if f.Preset == preset && slices.Contains(f.NotPassed, checker) {
			return true
		}
	}
	return false
}

// Save writes mutants.md and mutants.json into dir.
func (r *Report) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save mutation report: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "mutants.md"))
	if err != nil {
		return fmt.Errorf("save mutation report: %w", err)
	}
	if err := r.WriteMarkdown(f); err != nil {
		f.Close()
		return fmt.Errorf("save mutation report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save mutation report: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("save mutation report: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "mutants.json"), js, 0o644)
}

// LoadReport reads a mutants.json that Save wrote.
func LoadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load mutation report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("load mutation report %s: %w", path, err)
	}
	return &r, nil
}

// CoverageFromRuns reads a coverage map (preset -> probe -> hits) from
// stored run directories: every result.json under dir, the preset named
// by its "scenario" field, hits summed when a preset ran more than once.
// It also returns the runs that did not pass (on the unmutated engine, a
// checker that fails there says nothing about a mutant).
func CoverageFromRuns(dir string) (map[string]map[string]int64, []RunResult, error) {
	cov := map[string]map[string]int64{}
	var failures []RunResult
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "result.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var rf struct {
			Scenario string `json:"scenario"`
			resultFile
		}
		if err := json.Unmarshal(b, &rf); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if rf.ExitCode != 0 {
			failures = append(failures, RunResult{Preset: rf.Scenario, ExitCode: rf.ExitCode, NotPassed: rf.notPassed(), FirstFailure: rf.FirstFailure, Dir: filepath.Dir(path)})
		}
		if cov[rf.Scenario] == nil {
			cov[rf.Scenario] = map[string]int64{}
		}
		for p, n := range rf.Probes {
			cov[rf.Scenario][p] += n
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read coverage from %s: %w", dir, err)
	}
	if len(cov) == 0 {
		return nil, nil, fmt.Errorf("read coverage from %s: no result.json", dir)
	}
	return cov, failures, nil
}

// regressionOf is the regression whose own branch probe marks, or "".
func (r *Report) regressionOf(probe string) string { return r.RegressionBranches[probe] }

// regressionOnly counts the not-reached mutants at a regression's own
// branch: the fixed engine never runs them, so no preset can.
func (r *Report) regressionOnly() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Verdict == NotReached && r.regressionOf(o.Probe) != "" {
			n++
		}
	}
	return n
}
