package mutate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Verdict is what the gate's presets did to one mutant.
type Verdict string

const (
	// Caught: a run of a preset failed a checker (or the engine crashed
	// the run, which fails the gate too: Checker is "crash").
	Caught Verdict = "caught"
	// Missed: the mutant's probe was hit and every run passed.
	Missed Verdict = "missed"
	// NotReached: no run hit the probe, so the broken branch never ran
	// (no preset reached it in the coverage run either, or none of the
	// runs did).
	NotReached Verdict = "not reached"
	// NoBuild: the mutant does not compile; it is reported, not counted.
	NoBuild Verdict = "no build"
	// Inconclusive: a run proved nothing (exit 2 or 3) and none caught.
	Inconclusive Verdict = "inconclusive"
	// StillCaught: a mutant of a regression's own branch, run with the
	// regression on, left the regression failing the checker that catches
	// it. The gate cannot tell the variant from the regression, and need
	// not: the fixed engine never runs the branch, and the variant is
	// still a bug the gate fails.
	StillCaught Verdict = "regression still caught"
)

// RegressionLost is the checker of a catch by a regression's own spec: a
// mutant of that regression's branch, run with the regression on, left
// the regression's catching preset passing the checker the gate requires
// to fail, so the gate's spec for the regression fails.
const RegressionLost = "regression-lost"

// RegressionCatch is how the gate catches one known regression: its spec
// runs Preset with Regression on and requires Checker to fail.
type RegressionCatch struct {
	Regression, Preset, Checker string
}

// Options configure a mutation run. The zero value of each field but Root
// has the default its comment gives.
type Options struct {
	// Root is the module to copy and mutate (its working tree, read only).
	Root string
	// Work is the scratch directory for the copies and run directories;
	// default a fresh directory under os.TempDir().
	Work string
	// Seed is every run's seed; default 1.
	Seed uint64
	// Presets are the preset scenarios of the coverage run; default every
	// suites/scenarios/*.yaml of Root and, when screening in the simulator,
	// each one again in Mooncake's dialect as "NAME@mooncake" unless it is
	// in that dialect already: the gate explores every preset's simulated
	// seeds in both, and some branches exist in one only. A preset given
	// as "NAME@WIRE" runs with --wire WIRE.
	Presets []string
	// Coverage, when set, is a stored coverage (preset -> probe -> hits,
	// as Run writes coverage.json) used instead of a coverage run.
	Coverage map[string]map[string]int64
	// CoverageFailures are the stored coverage's runs that did not pass
	// (CoverageFromRuns returns them); reported with the results.
	CoverageFailures []RunResult
	// MaxRuns is how many presets run against one mutant at most, in
	// reaching's order (the most hits, then the largest share of hits);
	// default 2. The runs stop at the first catch.
	MaxRuns int
	// RunTimeout bounds one pdchaos run; default 4m.
	RunTimeout time.Duration
	// Log gets one line per step; default io.Discard.
	Log io.Writer
	// SimSeeds, when above 0, screens in the deterministic simulator
	// instead of live runs: every run is `pdchaos sim PRESET --seeds
	// Seed..Seed+SimSeeds-1`, coverage included, and a mutant is caught
	// when any seed fails. Only mutants of the code the simulator runs
	// (Simulated) are evaluated; Run leaves the others out.
	SimSeeds int
	// SimSwarmSeeds, with SimSeeds, adds that many swarm seeds (`pdchaos
	// sim PRESET --swarm`) from Seed to every simulated run, as the gate
	// explores them; 0: none.
	SimSwarmSeeds int
	// RegressionCatches maps each probe of a regression's own branch to
	// how the gate catches that regression (the caller fills it from the
	// probe table and the regression catalogue: this package imports
	// nothing of the module it mutates). A mutant there that no coverage
	// run reached (the fixed engine never runs it) runs the regression's
	// catching preset with the regression on instead, as the gate's spec
	// for it does: caught (RegressionLost) when the checker no longer
	// fails, StillCaught when it still does. Nil: such mutants are not
	// reached.
	RegressionCatches map[string]RegressionCatch
}

func (o *Options) defaults() error {
	if o.Root == "" {
		return errors.New("mutate: Options.Root is empty")
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 2
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = 4 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Presets) == 0 {
		files, err := filepath.Glob(filepath.Join(o.Root, "suites", "scenarios", "*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("mutate: no preset scenarios under %s/suites/scenarios", o.Root)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".yaml")
			o.Presets = append(o.Presets, name)
			if o.SimSeeds > 0 {
				b, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("mutate: read preset %s: %w", f, err)
				}
				if !presetWire.Match(b) {
					o.Presets = append(o.Presets, name+"@"+wireMooncake)
				}
			}
		}
	}
	for _, p := range o.Presets {
		if _, _, err := presetArgs(p); err != nil {
			return err
		}
	}
	if o.Work == "" {
		d, err := os.MkdirTemp("", "pdchaos-mutants-")
		if err != nil {
			return fmt.Errorf("mutate: scratch dir: %w", err)
		}
		o.Work = d
	}
	return nil
}

// RunResult is what one pdchaos run left in its result.json.
type RunResult struct {
	Preset   string `json:"preset"`
	ExitCode int    `json:"exit_code"`
	// Failed lists the checkers that failed, in the judge's order.
	Failed       []string `json:"failed,omitempty"`
	FirstFailure string   `json:"first_failure,omitempty"`
	// NotPassed lists the checkers that failed or were inconclusive.
	NotPassed []string `json:"not_passed,omitempty"`
	// FailedSeeds counts, by failing checker, the seeds it failed in (a
	// simulated run; nil live).
	FailedSeeds map[string]int `json:"failed_seeds,omitempty"`
	// Hits is how often the mutant's probes were hit in this run.
	Hits int64 `json:"hits"`
	// Crashed: the run ended without a result.json (the engine panicked
	// or the harness died); Output holds the tail of its output.
	Crashed bool             `json:"crashed,omitempty"`
	Output  string           `json:"output,omitempty"`
	Dir     string           `json:"dir,omitempty"`
	Probes  map[string]int64 `json:"-"`
}

// Outcome is one mutant's verdict with the runs it rests on.
type Outcome struct {
	Mutant
	Verdict Verdict `json:"verdict"`
	// Checker is the first failing checker of the catching run.
	Checker string `json:"checker,omitempty"`
	// Preset is the catching preset (or, when missed, those that ran).
	Preset     string      `json:"preset,omitempty"`
	BuildError string      `json:"build_error,omitempty"`
	Runs       []RunResult `json:"runs,omitempty"`
}

// Report is a whole mutation run.
type Report struct {
	Seed uint64 `json:"seed"`
	// SimSeeds is how many simulated seeds each run explored from Seed;
	// 0 for live runs.
	SimSeeds int `json:"sim_seeds,omitempty"`
	// NotSimulated counts the mutants a simulator screen left out: their
	// code runs live only.
	NotSimulated int                         `json:"not_simulated,omitempty"`
	Coverage     map[string]map[string]int64 `json:"coverage"`
	// CoverageFailures are coverage runs on the fixed engine that did not
	// pass: a preset that fails unmutated says nothing about a mutant.
	CoverageFailures []RunResult `json:"coverage_failures,omitempty"`
	Outcomes         []Outcome   `json:"outcomes"`
	// ObserveOnly are probe sites with no mutant (nothing follows the Hit).
	ObserveOnly []Site `json:"observe_only,omitempty"`
	// RegressionBranches maps a probe that marks a regression's own
	// branch to that regression (the caller fills it from the probe
	// table: this package imports nothing of the module it mutates).
	RegressionBranches map[string]string `json:"regression_branches,omitempty"`
}

// Run evaluates mutants: one copy of Root is built unmutated for the
// coverage run (unless opts.Coverage is given), then each mutant is
// applied to a second copy, built and run against the presets that reach
// its probe. Product code in Root is never touched.
func Run(ctx context.Context, opts Options, mutants []Mutant) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{Seed: opts.Seed, SimSeeds: opts.SimSeeds, Coverage: opts.Coverage, CoverageFailures: opts.CoverageFailures}
	dir, err := scratchCopy(ctx, opts)
	if err != nil {
		return nil, err
	}
	if rep.Coverage == nil {
		bin, err := Build(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("mutate: the unmutated copy does not build: %w", err)
		}
		rep.Coverage = map[string]map[string]int64{}
		for _, p := range opts.Presets {
			fmt.Fprintf(opts.Log, "coverage: %s seed %d\n", p, opts.Seed)
			r := opts.run(ctx, bin, dir, filepath.Join(opts.Work, "coverage"), p, nil, "")
			rep.Coverage[p] = r.Probes
			if r.ExitCode != 0 {
				rep.CoverageFailures = append(rep.CoverageFailures, r)
			}
		}
		if b, err := json.MarshalIndent(rep.Coverage, "", "  "); err == nil {
			_ = os.WriteFile(filepath.Join(opts.Work, "coverage.json"), b, 0o644)
		}
	}
	for _, m := range mutants {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if opts.SimSeeds > 0 && !Simulated(m) {
			rep.NotSimulated++
			continue
		}
		o := evaluate(ctx, opts, rep.Coverage, dir, m)
		if err := ctx.Err(); err != nil {
			// Interrupted mid-mutant: its killed run is no verdict.
			return rep, err
		}
		fmt.Fprintf(opts.Log, "%s: %s %s %s\n", m.ID(), o.Verdict, o.Checker, o.Preset)
		rep.Outcomes = append(rep.Outcomes, o)
	}
	return rep, nil
}

func evaluate(ctx context.Context, opts Options, cov map[string]map[string]int64, dir string, m Mutant) Outcome {
	o := Outcome{Mutant: m}
	probes := append([]string{m.Probe}, m.Also...)
	presets := reaching(cov, probes)
	if len(presets) == 0 {
		if rc, ok := opts.RegressionCatches[m.Probe]; ok {
			return evaluateRegression(ctx, opts, dir, m, rc)
		}
		o.Verdict = NotReached
		return o
	}
	bin, restore, err := applyBuild(ctx, dir, m)
	defer restore()
	if err != nil {
		o.Verdict, o.BuildError = NoBuild, err.Error()
		return o
	}
	if len(presets) > opts.MaxRuns {
		presets = presets[:opts.MaxRuns]
	}
	var hits int64
	inconclusive := false
	for _, p := range presets {
		r := opts.run(ctx, bin, dir, filepath.Join(opts.Work, "runs", safe(m.ID())), p, probes, "")
		o.Runs = append(o.Runs, r)
		hits += r.Hits
		switch {
		case r.Crashed:
			o.Verdict, o.Checker, o.Preset = Caught, "crash", p
			return o
		case r.ExitCode == 1 && len(r.Failed) > 0:
			o.Verdict, o.Checker, o.Preset = Caught, r.Failed[0], p
			return o
		case r.ExitCode != 0:
			inconclusive = true
		}
	}
	o.Preset = strings.Join(presets, ",")
	switch {
	case inconclusive:
		o.Verdict = Inconclusive
	case hits == 0:
		o.Verdict = NotReached
	default:
		o.Verdict = Missed
	}
	return o
}

// applyBuild breaks the copy's file for m and builds the copy; restore
// puts the file's own bytes back (call it whatever the error). The copy
// holds one mutant at a time, and stays the tree copied at the start
// however Root changes during an hour-long run (restoring from Root mixed
// files edited since into the old tree).
func applyBuild(ctx context.Context, dir string, m Mutant) (bin string, restore func(), err error) {
	path := filepath.Join(dir, m.File)
	pristine, err := os.ReadFile(path)
	if err != nil {
		return "", func() {}, fmt.Errorf("read %s: %w", m.File, err)
	}
	restore = func() { _ = os.WriteFile(path, pristine, 0o644) }
	if err := Apply(dir, m); err != nil {
		return "", restore, err
	}
	bin, err = Build(ctx, dir)
	return bin, restore, err
}

// evaluateRegression runs m, a mutant of rc's regression's own branch, as
// the gate's spec for that regression runs: its catching preset with the
// regression on (in the simulator, the plain seeds only, as the gate's
// simulated spec explores them).
func evaluateRegression(ctx context.Context, opts Options, dir string, m Mutant, rc RegressionCatch) Outcome {
	o := Outcome{Mutant: m, Preset: rc.Preset + " with " + rc.Regression}
	bin, restore, err := applyBuild(ctx, dir, m)
	defer restore()
	if err != nil {
		o.Verdict, o.BuildError = NoBuild, err.Error()
		return o
	}
	r := opts.run(ctx, bin, dir, filepath.Join(opts.Work, "runs", safe(m.ID())), rc.Preset, append([]string{m.Probe}, m.Also...), rc.Regression)
	o.Runs = append(o.Runs, r)
	o.Verdict, o.Checker = regressionVerdict(r, rc)
	return o
}

// regressionVerdict judges a run of a regression's catching preset with
// the regression on and one of its branches broken: the gate's spec for
// the regression fails when the engine crashes or the checker it requires
// no longer fails.
func regressionVerdict(r RunResult, rc RegressionCatch) (Verdict, string) {
	switch {
	case r.Crashed:
		return Caught, "crash"
	case r.ExitCode != 0 && r.ExitCode != 1:
		return Inconclusive, ""
	case r.Hits == 0:
		return NotReached, ""
	case !slices.Contains(r.Failed, rc.Checker):
		return Caught, RegressionLost
	}
	return StillCaught, rc.Checker
}

// run is one preset's run against bin, live or SimSeeds simulated seeds,
// with regression on unless it is "".
func (o Options) run(ctx context.Context, bin, dir, under, preset string, probes []string, regression string) RunResult {
	if o.SimSeeds > 0 {
		return runSim(ctx, o, bin, dir, preset, probes, regression)
	}
	return runPreset(ctx, o, bin, dir, under, preset, probes, regression)
}

// reaching lists the presets whose coverage run hit any of probes: first
// the one that hit them most, then the one where they are the largest
// share of all its probe hits, then the rest by hits (ties by name, so
// the order is stable). Hits alone favour the busiest presets, whose
// clients have often left before the broken branch could hurt them; the
// share finds the preset built around that branch (stale-kv-writes for a
// page freed before its ACK, say), so MaxRuns of 2 tries both kinds.
func reaching(cov map[string]map[string]int64, probes []string) []string {
	hits := map[string]int64{}
	share := map[string]float64{}
	for p, m := range cov {
		var all int64
		for _, n := range m {
			all += n
		}
		for _, pr := range probes {
			hits[p] += m[pr]
		}
		if all > 0 {
			share[p] = float64(hits[p]) / float64(all)
		}
	}
	var out []string
	for p, h := range hits {
		if h > 0 {
			out = append(out, p)
		}
	}
	byHits := func(a, b string) int {
		if c := cmp.Compare(hits[b], hits[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(out, byHits)
	if len(out) > 2 {
		// The best share among the rest goes second.
		best := 1
		for i := 2; i < len(out); i++ {
			if share[out[i]] > share[out[best]] {
				best = i
			}
		}
		p := out[best]
		out = slices.Delete(out, best, best+1)
		out = slices.Insert(out, 1, p)
	}
	return out
}

// resultFile is the part of result.json a mutation run reads.
type resultFile struct {
	ExitCode     int    `json:"exit_code"`
	FirstFailure string `json:"first_failure"`
	Checks       []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"checks"`
	Probes map[string]int64 `json:"probes"`
}

// notPassed lists the checks that failed or were inconclusive.
func (rf resultFile) notPassed() []string {
	var out []string
	for _, c := range rf.Checks {
		if c.Status == "fail" || c.Status == "inconclusive" {
			out = append(out, c.Name)
		}
	}
	return out
}

// runPreset runs `bin run preset --seed S --results under/preset` in the
// copy and reads its result.json. The run gets its own process group, so
// a timeout ends role processes with it.
func runPreset(ctx context.Context, opts Options, bin, dir, under, preset string, probes []string, regression string) RunResult {
	res := RunResult{Preset: preset, Dir: filepath.Join(under, preset)}
	_ = os.MkdirAll(res.Dir, 0o755)
	var out bytes.Buffer
	name, wire, _ := presetArgs(preset) // checked by Options.defaults
	args := append([]string{"run", name, "--seed", fmt.Sprint(opts.Seed), "--results", res.Dir}, wire...)
	if regression != "" {
		args = append(args, "--regression", regression)
	}
	res.ExitCode = runBinary(ctx, opts.RunTimeout, bin, dir, &out, args...)
	files, _ := filepath.Glob(filepath.Join(res.Dir, "*", "result.json"))
	var rf resultFile
	b, rerr := os.ReadFile(firstOr(files))
	if rerr != nil || json.Unmarshal(b, &rf) != nil {
		res.Crashed = res.ExitCode != 0
		res.Output = tail(out.String(), 2000)
		return res
	}
	res.FirstFailure, res.Probes, res.NotPassed = rf.FirstFailure, rf.Probes, rf.notPassed()
	if res.ExitCode == 0 {
		res.ExitCode = rf.ExitCode
	}
	for _, c := range rf.Checks {
		if c.Status == "fail" {
			res.Failed = append(res.Failed, c.Name)
		}
	}
	for _, p := range probes {
		res.Hits += rf.Probes[p]
	}
	return res
}

// runBinary runs the copy's bin with args in dir, bounded by limit, its
// output into out, and returns its exit code (-1: it did not run). It gets
// its own process group, so a timeout ends role processes with it.
func runBinary(ctx context.Context, limit time.Duration, bin, dir string, out *bytes.Buffer, args ...string) int {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func firstOr(files []string) string {
	slices.Sort(files)
	if len(files) == 0 {
		return "/nonexistent/result.json"
	}
	return files[len(files)-1]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// Wires are the dialects `pdchaos run` and `pdchaos sim` take with
// --wire (contract.Wires, which this package may not import: a test of
// cmd/pdchaos-mutants keeps the two equal).
var Wires = []string{"nixl", wireMooncake}

const wireMooncake = "mooncake"

// presetWire finds a preset file's own Mooncake dialect (engine.wire).
var presetWire = regexp.MustCompile(`(?m)^\s+wire:\s*"?` + wireMooncake + `"?\s*$`)

// presetArgs splits a preset as Options.Presets names it ("NAME" or
// "NAME@WIRE") into the scenario and the flags that select its dialect.
func presetArgs(preset string) (name string, args []string, err error) {
	name, wire, ok := strings.Cut(preset, "@")
	if !ok {
		return preset, nil, nil
	}
	if name == "" || !slices.Contains(Wires, wire) {
		return "", nil, fmt.Errorf("mutate: preset %q: want NAME or NAME@WIRE with WIRE one of %v", preset, Wires)
	}
	return name, []string{"--wire", wire}, nil
}

func safe(id string) string {
	return strings.NewReplacer("/", "_", "@", "_", ":", "_").Replace(id)
}

// scratchCopy copies opts.Root afresh to Work/module, the one copy a
// screen mutates, and returns its path.
func scratchCopy(ctx context.Context, opts Options) (string, error) {
	dir := filepath.Join(opts.Work, "module")
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("mutate: clear %s: %w", dir, err)
	}
	fmt.Fprintf(opts.Log, "copy %s to %s\n", opts.Root, dir)
	if err := CopyModule(ctx, opts.Root, dir); err != nil {
		return "", err
	}
	return dir, nil
}
