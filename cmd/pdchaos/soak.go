package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/reports"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

func newSoakCmd(stats *selfStats) *cobra.Command {
	var tf targetFlags
	var duration time.Duration
	var keepPassing bool
	var profile string
	cmd := &cobra.Command{
		Use:   "soak --duration D [SCENARIO|PRESET...]",
		Short: "Run scenarios (default: every preset) with fresh seeds until time is up; keep every failing run",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				names, err := harness.PresetNames(scenarios.FS)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				args = names
			}
			var scs []*harness.Scenario
			for _, a := range args {
				sc, err := loadScenario(a)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				if err := sc.SetProfile(profile); err != nil {
					return &exitError{exitHarness, err}
				}
				scs = append(scs, sc)
			}
			for _, sc := range scs { // refuse a bad target before anything starts
				if _, _, err := tf.source(sc, io.Discard); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			return soak(cmd.Context(), cmd.OutOrStdout(), scs, tf, duration, keepPassing, stats.betweenRuns)
		},
	}
	tf.register(cmd)
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "how long to keep starting runs")
	cmd.Flags().BoolVar(&keepPassing, "keep-passing", false, "keep passing run directories too")
	cmd.Flags().StringVar(&profile, "profile", "", profileFlagHelp())
	return cmd
}

// soak runs scenarios until d is up; betweenRuns (may be nil) is called
// with the run's number after each run has closed its target.
func soak(ctx context.Context, out io.Writer, scs []*harness.Scenario, tf targetFlags, d time.Duration, keep bool, betweenRuns func(run int)) error {
	start := time.Now()
	dir := filepath.Join(tf.results, "soak-"+start.Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &exitError{exitHarness, fmt.Errorf("soak: create %s: %w", dir, err)}
	}
	sum := reports.Soak{Started: start, Verdict: check.Pass}
	fmt.Fprintf(out, "soak: %d scenarios for %v; failing runs kept under %s\n", len(scs), d, tf.results)
	for i := 0; ctx.Err() == nil; i++ {
		sc := scs[i%len(scs)]
		left := d - time.Since(start)
		if left <= 0 || (i > 0 && left < sc.Duration/2) {
			break
		}
		seed := harness.NewSeed()
		src, noCheck, err := tf.source(sc, io.Discard)
		if err != nil {
			return &exitError{exitHarness, err}
		}
		c := sc.Checks
		bound := sc.Duration + c.DrainDeadline + c.ProbeDeadline + 90*time.Second
		rctx, cancel := context.WithTimeout(ctx, bound) // a wedged target cannot stall the soak
		fmt.Fprintf(out, "[%d] %s seed %d\n", i+1, sc.Name, seed)
		r := reports.SoakRun{Scenario: sc.Name, Seed: seed, Start: time.Since(start)}
		res, err := runOne(rctx, out, sc, seed, src, noCheck, tf.results, tf.args())
		cancel()
		if betweenRuns != nil {
			betweenRuns(i + 1)
		}
		switch {
		case err != nil:
			r.Verdict, r.Error = "error", err.Error()
			fmt.Fprintf(out, "[%d] harness error: %v\n", i+1, err)
		default:
			r.Verdict, r.First, r.Dir, r.Duration, r.Checks = res.Verdict, res.FirstFailure, res.RunDir, res.Duration, res.Checks
			if res.HarnessError != "" {
				r.Verdict, r.Error = "error", res.HarnessError
			}
			if r.Verdict == check.Pass && !keep {
				_ = os.RemoveAll(res.RunDir)
				r.Dir = ""
			}
		}
		switch {
		case r.Verdict == check.Fail:
			sum.Verdict = check.Fail
		case r.Verdict != check.Pass && sum.Verdict == check.Pass:
			sum.Verdict = check.Inconclusive
		}
		sum.Runs = append(sum.Runs, r)
	}
	sum.Duration = time.Since(start)
	b, _ := json.MarshalIndent(sum, "", "  ")
	report := filepath.Join(dir, reports.SoakFile)
	if err := os.WriteFile(report, b, 0o644); err != nil {
		return &exitError{exitHarness, fmt.Errorf("soak: write %s: %w", report, err)}
	}
	if err := reports.WriteSoak(dir, &sum); err != nil {
		fmt.Fprintf(out, "soak: %v\n", err)
	}
	counts := map[check.Status]int{}
	for _, r := range sum.Runs {
		counts[r.Verdict]++
		if r.Dir != "" {
			fmt.Fprintf(out, "  kept %s (%s, seed %d, %s)\n", r.Dir, r.Scenario, r.Seed, r.Verdict)
		}
	}
	fmt.Fprintf(out, "soak verdict: %s — %d runs (%d pass, %d fail, %d inconclusive, %d error) in %v\nreport: %s\n",
		sum.Verdict, len(sum.Runs), counts[check.Pass], counts[check.Fail], counts[check.Inconclusive], counts["error"],
		sum.Duration.Round(time.Second), filepath.Join(dir, reports.IndexFile))
	if ctx.Err() != nil {
		fmt.Fprintln(out, "soak interrupted")
	}
	if code := harness.ExitCodeFor(sum.Verdict); code != exitPass {
		return &exitError{code, fmt.Errorf("soak %s", sum.Verdict)}
	}
	return nil
}
