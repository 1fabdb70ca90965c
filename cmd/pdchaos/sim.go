package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/sim"
	simscenario "github.com/pdchaos/pdchaos/sim/scenario"
)

// newSimCmd runs a scenario in the deterministic simulator: a seed range
// on every core, or one seed replayed with its interleaving.
func newSimCmd() *cobra.Command {
	var seeds, regressions []string
	var seed uint64
	var trace, probes, first, swarm, quiet bool
	var workers int
	var checker, shrinkTo string
	var wire wireOverride
	cmd := &cobra.Command{
		Use:   "sim SCENARIO",
		Short: "Run a scenario in the deterministic simulator: explore seeds (--seeds 1..N) or replay one (--seed S --trace)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if len(regressions) > 0 {
				sc.Engine.Regressions = append(sc.Engine.Regressions, regressions...)
			}
			if err := wire.apply(sc); err != nil {
				return &exitError{exitHarness, err}
			}
			if checker != "" && !slices.Contains(contract.CheckNames(), checker) {
				return &exitError{exitHarness, fmt.Errorf("sim --checker %q: not a checker (%s)", checker, strings.Join(contract.CheckNames(), ", "))}
			}
			cfg, skipped, err := simscenario.Config(sc)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if quiet {
				cfg.Clients.Quiet()
			}
			out := cmd.OutOrStdout()
			for _, s := range skipped {
				fmt.Fprintf(out, "skipped %s\n", s)
			}
			if cmd.Flags().Changed("seed") && shrinkTo != "" {
				return simShrink(cmd.Context(), out, sc, seed, checker, shrinkTo)
			}
			if cmd.Flags().Changed("seed") {
				if swarm {
					var desc string
					cfg, desc = sim.Swarm(cfg, seed)
					fmt.Fprintln(out, desc)
				}
				return simOne(cmd.Context(), out, cfg, seed, trace, probes)
			}
			from, to, err := parseSeeds(strings.Join(seeds, ","))
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if _, set := os.LookupEnv("GOGC"); !set {
				// Seeds allocate fast and keep little: collecting at 5x
				// the live heap instead of 2x takes a fifth off the wall
				// time (GOGC in the environment still rules).
				debug.SetGCPercent(400)
			}
			start := time.Now()
			sum, err := sim.Explore(cmd.Context(), cfg, from, to, sim.ExploreOptions{Workers: workers, StopAtFirst: first, Checker: checker, Swarm: swarm})
			wall := time.Since(start)
			if err != nil && sum.Seeds == 0 {
				return &exitError{exitHarness, err}
			}
			for _, r := range sum.Failing {
				name := r.Failed
				if checker != "" {
					name = checker
				}
				c, _ := r.Checks.Get(name)
				fmt.Fprintf(out, "seed %d: FAIL %s: %s\n", r.Seed, name, c.Summary)
				if r.Swarm != "" {
					fmt.Fprintf(out, "  %s\n", r.Swarm)
				}
			}
			fmt.Fprintf(out, "%s: %d seeds, %d failing, %v wall (%.1f seeds/s, %d simulated requests, %.0f simulated requests/s, %d workers)\n",
				cfg.Name, sum.Seeds, len(sum.Failing), wall.Round(time.Millisecond), float64(sum.Seeds)/wall.Seconds(),
				sum.Requests, float64(sum.Requests)/wall.Seconds(), workers)
			byChecker := map[string]int{}
			for _, r := range sum.Failing {
				for _, c := range r.Checks.Failed() {
					byChecker[c]++
				}
			}
			for _, c := range slices.Sorted(maps.Keys(byChecker)) {
				fmt.Fprintf(out, "  %s failed in %d seeds\n", c, byChecker[c])
			}
			if len(sum.Failing) > 0 {
				sw := ""
				if swarm {
					sw = " --swarm"
				}
				if quiet {
					sw += " --quiet-clients"
				}
				fmt.Fprintf(out, "replay: pdchaos sim %s --seed %d --trace%s%s%s\n", args[0], sum.Failing[0].Seed, sw, regressionFlags(regressions), wire.flag())
			}
			if probes {
				printCoverage(out, sum.ProbeSeeds, sum.Seeds)
			}
			if len(sum.Failing) > 0 {
				return &exitError{exitViolation, fmt.Errorf("sim %s: %d of %d seeds fail", cfg.Name, len(sum.Failing), sum.Seeds)}
			}
			if err != nil { // interrupted: what ran passed, the rest never ran
				err = fmt.Errorf("sim %s: interrupted after %d of %d seeds, none failing: inconclusive: %w", cfg.Name, sum.Seeds, to-from+1, err)
				fmt.Fprintln(out, err)
				return &exitError{exitInconclusive, err}
			}
			return nil
		},
	}
	wire.register(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&seeds, "seeds", []string{"1..100"}, "seed range FROM..TO to explore")
	fl.Uint64Var(&seed, "seed", 0, "replay this one seed")
	fl.StringSliceVar(&regressions, "regression", nil, "switch on a known regression by name (repeatable)")
	fl.BoolVar(&trace, "trace", false, "with --seed: print the interleaving (actor steps, messages, faults)")
	fl.BoolVar(&probes, "probes", false, "print code probe coverage")
	fl.BoolVar(&swarm, "swarm", false, "swarm testing: each seed also draws which fault kinds (and cancel and kill policies) are on, half the seeds spread the deadlines apart, and a third add a stranger (a peer that is not the engine)")
	fl.BoolVar(&quiet, "quiet-clients", false, "the clients never cancel, time out, die or call /abort_request (every ABORT is the engine's own): for orderings the first client ABORT would end")
	fl.BoolVar(&first, "first", false, "stop at the first failing seed")
	fl.StringVar(&shrinkTo, "shrink", "", "with --seed: shrink the failing run (fewer requests, faults, shorter) and write the minimal scenario file here")
	fl.StringVar(&checker, "checker", "", "count a seed as failing only when this checker fails")
	fl.IntVar(&workers, "workers", runtime.NumCPU(), "seeds run at once (default: one per core)")
	return cmd
}

// simShrink shrinks a failing seed and writes the minimal scenario.
func simShrink(ctx context.Context, out io.Writer, sc *harness.Scenario, seed uint64, checker, path string) error {
	if checker == "" {
		cfg, _, err := simscenario.Config(sc)
		if err != nil {
			return &exitError{exitHarness, err}
		}
		r, err := sim.Run(ctx, cfg, seed, sim.Options{})
		if err != nil {
			return &exitError{exitHarness, err}
		}
		if r.Failed == "" {
			return &exitError{exitHarness, fmt.Errorf("sim --shrink: seed %d of %s fails no checker", seed, sc.Name)}
		}
		checker = r.Failed
	}
	sh, err := simscenario.Shrink(ctx, sc, seed, checker)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	y, err := sh.Scenario.YAML()
	if err != nil {
		return &exitError{exitHarness, err}
	}
	if err := os.WriteFile(path, y, 0o644); err != nil {
		return &exitError{exitHarness, fmt.Errorf("sim --shrink: write %s: %w", path, err)}
	}
	fmt.Fprintf(out, "shrunk %s seed %d (%s fails) in %d runs\n  before: %s\n  after:  %s\nwrote %s; replay: pdchaos sim %s --seed %d\n",
		sc.Name, seed, checker, sh.Tries, sh.Before, sh.After, path, path, seed)
	return nil
}

func regressionFlags(rs []string) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(" --regression " + r)
	}
	return b.String()
}

// simOne replays one seed and prints its verdict, trace and probes.
func simOne(ctx context.Context, out io.Writer, cfg sim.Config, seed uint64, trace, probes bool) error {
	r, err := sim.Run(ctx, cfg, seed, sim.Options{Trace: trace})
	if err != nil {
		return &exitError{exitHarness, err}
	}
	if trace {
		fmt.Fprint(out, r.Trace)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(out, "%-16s %-12s %s\n", c.Name, c.Status, c.Summary)
	}
	fmt.Fprintf(out, "seed %d: %d requests, %d steps, %v simulated\n", seed, r.Requests, r.Steps, r.SimTime.Round(time.Millisecond))
	if probes {
		hit := map[string]int{}
		for n, h := range r.Probes {
			if h > 0 {
				hit[n] = int(h)
			}
		}
		printCoverage(out, hit, 0)
	}
	if r.Failed != "" {
		return &exitError{exitViolation, fmt.Errorf("sim %s seed %d: %s", cfg.Name, seed, firstFailure(r))}
	}
	return nil
}

func firstFailure(r sim.Result) string {
	c, _ := r.Checks.Get(r.Failed)
	return c.Summary
}

// printCoverage lists every probe with its count: seeds that hit it over a
// range (seeds > 0), or hits in one run. Probes whose every site is outside
// engine/core count the I/O layer's sockets, dials and queues, which the
// simulator does not run but models in part (a refused chunk, a failed
// dial to a dead process): they are marked, and counted apart, so a reader
// can tell an unreached core branch from one the model may not have.
func printCoverage(out io.Writer, hits map[string]int, seeds int) {
	all := contract.Probes()
	names := make([]string, 0, len(all))
	ioOnly, never := map[string]bool{}, map[string]bool{}
	missed, core, coreMissed := 0, 0, 0
	for _, p := range all {
		if p.Never && hits[p.Name] == 0 {
			never[p.Name] = true // asserted, not asked for: listed apart
			continue
		}
		names = append(names, p.Name)
		ioOnly[p.Name] = !slices.ContainsFunc(p.Sites, func(s string) bool { return strings.HasPrefix(s, simulatedCore) })
		if !ioOnly[p.Name] {
			core++
		}
		if hits[p.Name] == 0 {
			missed++
			if !ioOnly[p.Name] {
				coreMissed++
			}
		}
	}
	sort.Strings(names)
	what := "hits"
	if seeds > 0 {
		what = "seeds"
	}
	fmt.Fprintf(out, "code probes: %d of %d to reach hit: %d of the %d in %s (the code the simulator runs), %d of the %d of the I/O layer (which it models in part)\n",
		len(names)-missed, len(names), core-coreMissed, core, simulatedCore, len(names)-core-(missed-coreMissed), len(names)-core)
	for _, n := range names {
		mark := " "
		if hits[n] == 0 {
			mark = "-"
		}
		note := ""
		if ioOnly[n] {
			note = " (I/O layer)"
		}
		fmt.Fprintf(out, "  %s %-52s %d %s%s\n", mark, n, hits[n], what, note)
	}
	if len(never) > 0 {
		fmt.Fprintf(out, "never on the fixed engine (asserted: a hit fails %s): %s\n", contract.CheckUnreachableBranches,
			strings.Join(slices.Sorted(maps.Keys(never)), ", "))
	}
}

// simulatedCore is the package the simulator runs: the engine's state
// machines, without the sockets, HTTP and queues around them.
const simulatedCore = "engine/core/"

// parseSeeds reads "N" or "FROM..TO".
func parseSeeds(s string) (uint64, uint64, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "..")
	from, err := strconv.ParseUint(lo, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("sim --seeds %q: want FROM..TO", s)
	}
	if !ok {
		return from, from, nil
	}
	to, err := strconv.ParseUint(hi, 10, 64)
	if err != nil || to < from {
		return 0, 0, fmt.Errorf("sim --seeds %q: want FROM..TO with TO >= FROM", s)
	}
	return from, to, nil
}
