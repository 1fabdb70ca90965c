package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/bench"
	"github.com/pdchaos/pdchaos/harness"
)

// benchParts are the parts of `pdchaos bench`, in the order they run.
var benchParts = []string{"engine", "harness", "detect", "memory"}

func newBenchCmd() *cobra.Command {
	var (
		out, base, cpuprofile, partsFlag string
		threshold                        float64
		serveTrivial                     bool
		eo                               bench.EngineOptions
		ho                               bench.HarnessOptions
		mo                               bench.MemoryOptions
		do                               bench.DetectOptions
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine, the harness and a long soak's memory, each against a reference from the same run",
		Long: `Measure pdchaos on this machine and write OUT/bench.json and OUT/bench.md.

  engine   requests/s, p50/p99 latency and CPU per request through router ->
           prefill -> decode (unlimited model speed), streaming and not, at
           each --concurrency, against a bare net/http handler replaying the
           engine's own answer bytes on the same loopback;
  harness  client CPU per request of the agent swarm against vegeta alone at
           the same rate (trivial server in a child process), and the largest
           swarm sustained with the harness under half the CPUs;
  detect   for each known regression in its catching scenario, the median
           over --seeds of the time from the first room missing its deadline
           to the first wedge, to the first gauge wedge alone, and to the
           verdict;
  memory   RSS, goroutines and open files of 'pdchaos soak' and of
           'pdchaos watch' over --memory-duration, sampled every 10s.

With --base, figures worse than in that bench.json by more than --threshold
are listed (ratios to the reference are compared where both runs have one)
and the exit code is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serveTrivial {
				return bench.ServeTrivial(cmd.Context(), os.Stdin, cmd.OutOrStdout())
			}
			parts, err := parseParts(partsFlag)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			var baseRep *bench.Report
			if base != "" { // a bad base must fail before minutes of measuring
				r, err := bench.ReadReport(base)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				baseRep = &r
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), parts, out, cpuprofile, baseRep, threshold, eo, ho, do, mo)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "runs/bench", "directory for bench.json and bench.md")
	fl.StringVar(&partsFlag, "parts", strings.Join(benchParts, ","), "parts to run: "+strings.Join(benchParts, ","))
	fl.StringVar(&base, "base", "", "an earlier bench.json to compare with")
	fl.Float64Var(&threshold, "threshold", 0.2, "with --base: list figures worse by more than this fraction")
	fl.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the engine part here (where its time goes)")
	fl.IntSliceVar(&eo.Concurrency, "concurrency", []int{16, 64, 512}, "engine: closed-loop client counts")
	fl.DurationVar(&eo.Duration, "point", 3*time.Second, "engine: how long each load point runs")
	fl.IntVar(&ho.Rate, "rate", 500, "harness: request rate of the swarm and of vegeta")
	fl.IntVar(&ho.Requests, "requests", 5000, "harness: requests each side completes")
	fl.IntVar(&ho.Agents, "agents", 1000, "harness: swarm size at --rate")
	fl.IntVar(&do.Seeds, "seeds", 5, "detect: seeds per regression")
	fl.StringSliceVar(&do.Regressions, "regressions", nil, "detect: regressions to time (default: every one)")
	fl.DurationVar(&mo.Duration, "memory-duration", 30*time.Minute, "memory: how long the soak and watch run")
	fl.BoolVar(&serveTrivial, "serve-trivial", false, "serve the trivial chat server (the harness part's child process)")
	_ = fl.MarkHidden("serve-trivial")
	return cmd
}

func parseParts(s string) (map[string]bool, error) {
	parts := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		known := false
		for _, k := range benchParts {
			known = known || k == p
		}
		if !known {
			return nil, fmt.Errorf("--parts: unknown part %q (want some of %s)", p, strings.Join(benchParts, ","))
		}
		parts[p] = true
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("--parts: none given (want some of %s)", strings.Join(benchParts, ","))
	}
	return parts, nil
}

func runBench(ctx context.Context, w io.Writer, parts map[string]bool, out, cpuprofile string, base *bench.Report, threshold float64,
	eo bench.EngineOptions, ho bench.HarnessOptions, do bench.DetectOptions, mo bench.MemoryOptions) error {
	self, err := os.Executable()
	if err != nil {
		return &exitError{exitHarness, fmt.Errorf("bench: find own binary: %w", err)}
	}
	progress := func(s string) { fmt.Fprintln(w, "bench:", s) }
	rep := bench.Report{Versions: harness.Versions(ctx), Started: time.Now(), Host: bench.Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Load1: load1()}}
	if parts["engine"] {
		eo.Progress = progress
		stopProf := func() {}
		if cpuprofile != "" {
			// The usual place is inside --out, which does not exist yet.
			if err := os.MkdirAll(filepath.Dir(cpuprofile), 0o755); err != nil {
				return &exitError{exitHarness, fmt.Errorf("bench: --cpuprofile: %w", err)}
			}
			f, err := os.Create(cpuprofile)
			if err != nil {
				return &exitError{exitHarness, fmt.Errorf("bench: --cpuprofile: %w", err)}
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return &exitError{exitHarness, fmt.Errorf("bench: --cpuprofile: %w", err)}
			}
			stopProf = func() { pprof.StopCPUProfile(); f.Close() }
		}
		figs, err := bench.Engine(ctx, eo)
		stopProf()
		rep.Figures = append(rep.Figures, figs...)
		if err != nil {
			return &exitError{exitHarness, err}
		}
	} else {
		rep.Skipped = append(rep.Skipped, "engine: not in --parts")
	}
	if parts["harness"] {
		ho.Progress, ho.Server = progress, []string{self, "bench", "--serve-trivial"}
		figs, err := bench.Harness(ctx, ho)
		rep.Figures = append(rep.Figures, figs...)
		if err != nil {
			return &exitError{exitHarness, err}
		}
	} else {
		rep.Skipped = append(rep.Skipped, "harness: not in --parts")
	}
	if parts["detect"] {
		do.Progress, do.CLI, do.Dir = progress, self, filepath.Join(out, "detect")
		figs, err := bench.Detection(ctx, do)
		rep.Figures = append(rep.Figures, figs...)
		if err != nil {
			return &exitError{exitHarness, err}
		}
	} else {
		rep.Skipped = append(rep.Skipped, "detect: not in --parts")
	}
	if parts["memory"] {
		mo.Progress, mo.CLI, mo.Dir = progress, self, filepath.Join(out, "memory")
		progress(fmt.Sprintf("memory: soak and watch for %s", mo.Duration))
		figs, err := bench.Memory(ctx, mo)
		rep.Figures = append(rep.Figures, figs...)
		if err != nil {
			return &exitError{exitHarness, err}
		}
	} else {
		rep.Skipped = append(rep.Skipped, "memory: not in --parts")
	}
	rep.Duration = time.Since(rep.Started)
	if err := rep.Write(out); err != nil {
		return &exitError{exitHarness, err}
	}
	fmt.Fprint(w, rep.Markdown())
	fmt.Fprintf(w, "bench: wrote %s and %s\n", filepath.Join(out, "bench.json"), filepath.Join(out, "bench.md"))
	if base != nil {
		changes := bench.Compare(*base, rep, threshold)
		if len(changes) > 0 {
			fmt.Fprintf(w, "bench: %d figures worse than the base by more than %.0f%%:\n", len(changes), 100*threshold)
			for _, c := range changes {
				fmt.Fprintln(w, "  "+c.String())
			}
			return &exitError{exitViolation, fmt.Errorf("bench: %d figures worse than the base", len(changes))}
		}
		fmt.Fprintf(w, "bench: no figure worse than the base by more than %.0f%%\n", 100*threshold)
	}
	return nil
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
