package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/reports"
)

// reproSource is what a replay starts from: the resolved scenario, the
// target flags the run used and, when known, what the run found.
type reproSource struct {
	path     string
	scenario *harness.Scenario
	args     []string
	verdict  check.Status // "" when unknown (a killed run)
	failing  string       // first failing checker, "" when none
}

// loadReproSource reads a run directory, a repro.yaml or a repro bundle.
func loadReproSource(arg string) (*reproSource, error) {
	path, dir := arg, ""
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		path, dir = filepath.Join(arg, reports.ReproFile), arg
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	src := &reproSource{path: path}
	if b, err := reports.ParseBundle(path, data); err == nil {
		body, err := b.ScenarioYAML()
		if err != nil {
			return nil, fmt.Errorf("repro %s: %w", path, err)
		}
		if src.scenario, err = harness.ParseScenario(path, body); err != nil {
			return nil, fmt.Errorf("repro %s: %w", path, err)
		}
		src.args, src.verdict = b.Args, b.Verdict
		for _, c := range b.Checks {
			if c.Status == check.Fail {
				src.failing = c.Name
				break
			}
		}
		return src, nil
	} else if !errors.Is(err, reports.ErrNotBundle) {
		return nil, fmt.Errorf("repro: %w", err)
	}
	if src.scenario, err = harness.ParseScenario(path, data); err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	src.args = reports.ReproArgs(data)
	if dir == "" {
		dir = filepath.Dir(path)
	}
	if res, err := harness.ReadResult(dir); err == nil && res.Scenario == src.scenario.Name {
		src.verdict = res.Verdict
		if f := res.Checks.Failed(); len(f) > 0 {
			src.failing = f[0]
		}
	}
	return src, nil
}

// newReproCmd replays a run from its repro.yaml or a repro bundle: the
// resolved scenario with its seed and regressions, on the target the run
// used (its recorded flags, unless target flags are given), N times.
func newReproCmd() *cobra.Command {
	var tf targetFlags
	var seed uint64
	var count int
	cmd := &cobra.Command{
		Use: "repro RUN_DIR|repro.yaml|BUNDLE",
		Short: "Replay a run (same scenario, seed, regressions and target flags) --count times and say how often " +
			"the verdict and the failing checker matched",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return &exitError{exitHarness, fmt.Errorf("repro: --count %d: want at least 1", count)}
			}
			rs, err := loadReproSource(args[0])
			if err != nil {
				return &exitError{exitHarness, err}
			}
			given := false
			cmd.Flags().Visit(func(f *pflag.Flag) {
				given = given || (f.Name != "seed" && f.Name != "count" && f.Name != "results")
			})
			if !given && len(rs.args) > 0 {
				results := tf.results
				if tf, err = parseTargetArgs(rs.args); err != nil {
					return &exitError{exitHarness, err}
				}
				tf.results = results
			}
			return repro(cmd, rs, tf, seed, count)
		},
	}
	tf.register(cmd)
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed (0: the one recorded)")
	cmd.Flags().IntVar(&count, "count", 1, "replay this many times and report how often the verdict and failing checker matched")
	return cmd
}

// repro runs the replays and prints the match table. With one replay the
// exit code is the run's; with more it is 0 when every replay matched the
// recorded verdict and failing checker, else 1.
func repro(cmd *cobra.Command, rs *reproSource, tf targetFlags, seed uint64, count int) error {
	out := cmd.OutOrStdout()
	sc := rs.scenario
	src, noCheck, err := tf.source(sc, cmd.ErrOrStderr())
	if err != nil {
		return &exitError{exitHarness, err}
	}
	if seed == 0 {
		seed = sc.Seed
	}
	want := "unknown (no stored verdict)"
	if rs.verdict != "" {
		want = fmt.Sprintf("%s, failing checker %q", rs.verdict, rs.failing)
	}
	fmt.Fprintf(out, "repro %s: scenario %s seed %d regressions %v, %d time(s); recorded: %s\n",
		rs.path, sc.Name, seed, sc.Engine.Regressions, count, want)
	var last *harness.Result
	verdicts, checkers := 0, 0
	var lines []string
	for i := range count {
		if cmd.Context().Err() != nil {
			break
		}
		scCopy := *sc
		res, err := runOne(cmd.Context(), out, &scCopy, seed, src, noCheck, tf.results, tf.args())
		if err != nil {
			return &exitError{exitHarness, err}
		}
		last = res
		failing := ""
		if f := res.Checks.Failed(); len(f) > 0 {
			failing = f[0]
		}
		vm := rs.verdict != "" && res.Verdict == rs.verdict
		cm := vm && failing == rs.failing
		if vm {
			verdicts++
		}
		if cm {
			checkers++
		}
		lines = append(lines, fmt.Sprintf("  %d/%d  %-12s %-16s verdict %s, checker %s  %s", i+1, count, res.Verdict,
			orDash(failing), matchWord(vm, rs.verdict), matchWord(cm, rs.verdict), res.RunDir))
	}
	fmt.Fprintln(out, "repro summary:")
	fmt.Fprintln(out, strings.Join(lines, "\n"))
	fmt.Fprintf(out, "verdict matched %d of %d; failing checker matched %d of %d\n", verdicts, len(lines), checkers, len(lines))
	if count == 1 && last != nil {
		if last.ExitCode != exitPass {
			return &exitError{last.ExitCode, last.Err()}
		}
		return nil
	}
	if rs.verdict == "" || verdicts < count || checkers < count {
		return &exitError{exitViolation, fmt.Errorf("repro: %d of %d replays matched", checkers, count)}
	}
	return nil
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// matchWord says whether a replay matched.
func matchWord(ok bool, recorded check.Status) string {
	switch {
	case recorded == "":
		return "n/a"
	case ok:
		return "matched"
	}
	return "DIFFERED"
}

// newReportCmd re-renders report.html and junit.xml of stored runs (and
// index.html and junit.xml of soak directories).
func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_DIR|SOAK_DIR...",
		Short: "Render report.html and junit.xml of stored runs again (index.html and junit.xml for a soak directory)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bad []error
			for _, dir := range args {
				if err := renderOne(cmd.OutOrStdout(), dir); err != nil {
					bad = append(bad, err)
				}
			}
			if len(bad) > 0 {
				return &exitError{exitHarness, fmt.Errorf("report: %w", errors.Join(bad...))}
			}
			return nil
		},
	}
}

// renderOne renders a run or a soak directory.
func renderOne(out io.Writer, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, reports.SoakFile)); err == nil {
		s, err := reports.ReadSoak(dir)
		if err != nil {
			return err
		}
		if err := reports.WriteSoak(dir, s); err != nil {
			return err
		}
		fmt.Fprintln(out, filepath.Join(dir, reports.IndexFile))
		return nil
	}
	if err := reports.RenderDir(dir); err != nil {
		return err
	}
	fmt.Fprintln(out, filepath.Join(dir, reports.ReportFile))
	return nil
}

// newBundleCmd writes a run's repro bundle.
func newBundleCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "bundle RUN_DIR",
		Short: "Write one small file to attach to an issue (resolved scenario, seed, versions, verdict, evidence, " +
			"the events around the violations); 'pdchaos repro FILE' replays it",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := reports.Load(args[0])
			if err != nil {
				return &exitError{exitHarness, fmt.Errorf("bundle: %w", err)}
			}
			b, err := reports.NewBundle(r, time.Now())
			if err != nil {
				return &exitError{exitHarness, err}
			}
			path := output
			if path == "" {
				path = filepath.Clean(args[0]) + ".bundle.yaml"
			}
			if err := b.Write(path); err != nil {
				return &exitError{exitHarness, fmt.Errorf("bundle: %w", err)}
			}
			st, _ := os.Stat(path)
			size := int64(0)
			if st != nil {
				size = st.Size()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%d bytes, %d events of the log, verdict %s)\nreplay: pdchaos repro %s\n",
				path, size, len(b.Events), b.Verdict, path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default RUN_DIR.bundle.yaml)")
	return cmd
}
