// Command pdchaos-mutants is the gate's mutation self-test (`make
// gate-mutants`): for each code probe's failure-handling branch it builds a
// scratch copy of the module with that branch broken (internal/mutate) and
// runs the preset scenarios that reach the probe against it, then writes
// mutants.md (probe, place, kind, verdict, checker, preset) and prints how
// many mutants the gate caught, missed and never reached, by checker.
//
//	pdchaos-mutants --list                       every mutant: probe, file:line, kind
//	pdchaos-mutants --results runs/mutants       all of them
//	pdchaos-mutants --probes abort,ack --limit 10 those matching, in that order
//	pdchaos-mutants --render runs/mutants/mutants.json   mutants.md again
//	pdchaos-mutants --sim 20 --max-runs 23       engine/core mutants in the simulator, seeds 1..20 of every reaching preset
//	pdchaos-mutants --planted suites/planted-bugs.json --sim 30 --sim-swarm 30
//	                                             the bugs planted off the probe sites, every preset swept
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/mutate"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		root     = flag.String("root", ".", "the module to copy and mutate (read only)")
		list     = flag.Bool("list", false, "print every mutant (probe, file:line, kind, what it drops) and exit")
		probes   = flag.String("probes", "", "comma-separated probe names or substrings; mutants matching them run, in that order (default: all)")
		kinds    = flag.String("kinds", "", "comma-separated kinds to run: skip, wrong-exit (default: both)")
		limit    = flag.Int("limit", 0, "run at most this many mutants (0: no limit)")
		results  = flag.String("results", "runs/mutants", "directory for mutants.md, mutants.json and (unless --work) the scratch copy")
		work     = flag.String("work", "", "scratch directory for the module copy and run directories (default: a fresh one under $TMPDIR)")
		coverage = flag.String("coverage", "", "reuse a coverage run: a directory of stored runs (result.json) or a coverage.json; default: run every preset once on the unmutated copy")
		seed     = flag.Uint64("seed", 1, "seed of every run")
		maxRuns  = flag.Int("max-runs", 2, "presets run per mutant at most (the one hitting its probe most, then the one where it is the largest share of hits, then by hits); stops at the first catch")
		timeout  = flag.Duration("run-timeout", 4*time.Minute, "limit of one pdchaos run")
		simSeeds = flag.Int("sim", 0, "screen in the deterministic simulator instead of live runs: each run explores this many seeds from --seed (engine/core mutants only; a catch is any failing seed)")
		swarm    = flag.Int("sim-swarm", 0, "with --sim: add this many swarm seeds (pdchaos sim --swarm) to every simulated run, as the gate explores them")
		render   = flag.String("render", "", "write mutants.md again from this mutants.json (into --results) and print its summary")
		planted  = flag.String("planted", "", "screen the bugs of this corpus file (e.g. "+mutate.PlantedFile+") instead of the probe mutants: each planted alone, every preset swept in the simulator (needs --sim); writes planted.md and planted.json")
		only     = flag.String("only", "", "with --planted: comma-separated bug names to screen, in that order (default: all)")
	)
	flag.Parse()
	if *planted != "" {
		return runPlanted(*root, *planted, split(*only), *results, *work, *seed, *simSeeds, *swarm, *timeout)
	}
	if *render != "" {
		rep, err := mutate.LoadReport(*render)
		if err == nil {
			if rep.RegressionBranches == nil {
				rep.RegressionBranches = regressionBranches() // a report written before it kept them
			}
			err = rep.Save(*results)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
			return 3
		}
		fmt.Print(rep.Summary())
		return 0
	}
	all, observeOnly, err := mutate.List(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
		return 3
	}
	if *list {
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROBE\tPLACE\tKIND\tDROPS")
		for _, m := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Probe, m.Place(), m.Kind, strings.Join(m.Dropped, "; "))
		}
		for _, s := range observeOnly {
			fmt.Fprintf(tw, "%s\t%s:%d\t-\t(observe only: nothing follows the Hit)\n", s.Probe, s.File, s.Line)
		}
		tw.Flush()
		fmt.Printf("%d mutants at %d sites; %d sites observe only\n", len(all), countSites(all), len(observeOnly))
		return 0
	}
	chosen := choose(all, split(*probes), split(*kinds))
	if *limit > 0 && len(chosen) > *limit {
		chosen = chosen[:*limit]
	}
	if len(chosen) == 0 {
		fmt.Fprintln(os.Stderr, "pdchaos-mutants: no mutant matches --probes/--kinds")
		return 3
	}
	opts := mutate.Options{Root: *root, Work: *work, Seed: *seed, MaxRuns: *maxRuns, RunTimeout: *timeout, Log: os.Stderr, SimSeeds: *simSeeds, SimSwarmSeeds: *swarm,
		RegressionCatches: regressionCatches()}
	if *swarm < 0 || (*swarm > 0 && *simSeeds == 0) {
		fmt.Fprintf(os.Stderr, "pdchaos-mutants: --sim-swarm %d: want a seed count, with --sim\n", *swarm)
		return 3
	}
	if *simSeeds < 0 {
		fmt.Fprintf(os.Stderr, "pdchaos-mutants: --sim %d: want a seed count of 1 or more (0: live runs)\n", *simSeeds)
		return 3
	}
	if opts.Work == "" {
		d, err := os.MkdirTemp("", "pdchaos-mutants-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
			return 3
		}
		defer os.RemoveAll(filepath.Join(d, "module"))
		opts.Work = d
	}
	fmt.Fprintf(os.Stderr, "scratch copy and run directories: %s\n", opts.Work)
	if *coverage != "" {
		if opts.Coverage, opts.CoverageFailures, err = loadCoverage(*coverage); err != nil {
			fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
			return 3
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := mutate.Run(ctx, opts, chosen)
	if rep != nil {
		rep.ObserveOnly = observeOnly
		rep.RegressionBranches = regressionBranches()
		if serr := rep.Save(*results); serr != nil {
			fmt.Fprintln(os.Stderr, "pdchaos-mutants:", serr)
			return 3
		}
		fmt.Print(rep.Summary())
		fmt.Printf("report: %s\n", filepath.Join(*results, "mutants.md"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
		return 3
	}
	return 0
}

// runPlanted screens a corpus of planted bugs (mutate.RunPlanted) and
// writes planted.md and planted.json into results.
func runPlanted(root, file string, only []string, results, work string, seed uint64, simSeeds, swarm int, timeout time.Duration) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "pdchaos-mutants:", err)
		return 3
	}
	if simSeeds <= 0 || swarm < 0 {
		return fail(fmt.Errorf("--planted: give --sim N (seeds of each preset, N of 1 or more) and --sim-swarm M of 0 or more, not --sim %d --sim-swarm %d", simSeeds, swarm))
	}
	bugs, err := mutate.ReadPlanted(file)
	if err != nil {
		return fail(err)
	}
	if len(only) > 0 {
		byName := map[string]mutate.Planted{}
		for _, b := range bugs {
			byName[b.Name] = b
		}
		var chosen []mutate.Planted
		for _, n := range only {
			b, ok := byName[n]
			if !ok {
				return fail(fmt.Errorf("--only: no bug %q in %s", n, file))
			}
			chosen = append(chosen, b)
		}
		bugs = chosen
	}
	if work == "" {
		d, err := os.MkdirTemp("", "pdchaos-planted-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(d)
		work = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := mutate.Options{Root: root, Work: work, Seed: seed, RunTimeout: timeout, Log: os.Stderr, SimSeeds: simSeeds, SimSwarmSeeds: swarm}
	out, err := mutate.RunPlanted(ctx, opts, bugs)
	if len(out) > 0 {
		if werr := savePlanted(results, out, seed, simSeeds, swarm); werr != nil {
			return fail(werr)
		}
		var md strings.Builder
		_ = mutate.WritePlantedMarkdown(&md, out, seed, simSeeds, swarm)
		fmt.Print(md.String())
		fmt.Printf("report: %s\n", filepath.Join(results, "planted.md"))
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

func savePlanted(dir string, out []mutate.PlantedOutcome, seed uint64, simSeeds, swarm int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save planted screen: %w", err)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("save planted screen: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "planted.json"), b, 0o644); err != nil {
		return fmt.Errorf("save planted screen: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "planted.md"))
	if err != nil {
		return fmt.Errorf("save planted screen: %w", err)
	}
	if err := mutate.WritePlantedMarkdown(f, out, seed, simSeeds, swarm); err != nil {
		f.Close()
		return fmt.Errorf("save planted screen: %w", err)
	}
	return f.Close()
}

// regressionBranches maps each probe of a regression's own branch to it.
func regressionBranches() map[string]string {
	out := map[string]string{}
	for _, p := range contract.Probes() {
		if p.Regression != "" {
			out[p.Name] = p.Regression
		}
	}
	return out
}

// regressionCatches maps each probe of a regression's own branch to how
// the gate catches that regression (contract.Catalogue).
func regressionCatches() map[string]mutate.RegressionCatch {
	caught := map[string]contract.Catch{}
	for _, r := range contract.Catalogue() {
		caught[r.Name] = r.Caught
	}
	out := map[string]mutate.RegressionCatch{}
	for probe, reg := range regressionBranches() {
		if c, ok := caught[reg]; ok {
			out[probe] = mutate.RegressionCatch{Regression: reg, Preset: c.Scenario, Checker: c.Checker}
		}
	}
	return out
}

// choose keeps the mutants whose probe matches one of pats (exact name or
// substring), ordered by the first pattern each matches, and whose kind is
// in kinds; empty lists keep everything.
func choose(all []mutate.Mutant, pats, kinds []string) []mutate.Mutant {
	var out []mutate.Mutant
	okKind := func(m mutate.Mutant) bool {
		if len(kinds) == 0 {
			return true
		}
		for _, k := range kinds {
			if string(m.Kind) == k {
				return true
			}
		}
		return false
	}
	if len(pats) == 0 {
		for _, m := range all {
			if okKind(m) {
				out = append(out, m)
			}
		}
		return out
	}
	taken := map[string]bool{}
	for _, p := range pats {
		for _, m := range all {
			if !taken[m.ID()] && okKind(m) && (m.Probe == p || strings.Contains(m.Probe, p)) {
				taken[m.ID()] = true
				out = append(out, m)
			}
		}
	}
	return out
}

func loadCoverage(path string) (map[string]map[string]int64, []mutate.RunResult, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read coverage: %w", err)
	}
	if fi.IsDir() {
		return mutate.CoverageFromRuns(path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read coverage: %w", err)
	}
	var cov map[string]map[string]int64
	if err := json.Unmarshal(b, &cov); err != nil {
		return nil, nil, fmt.Errorf("read coverage %s: %w", path, err)
	}
	return cov, nil, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func countSites(ms []mutate.Mutant) int {
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Place()] = true
	}
	return len(seen)
}
