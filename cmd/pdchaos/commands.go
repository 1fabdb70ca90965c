package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// addCommands registers the harness commands (run, repro, check, report,
// bundle, soak, watch, doctor, faults reset, faults list and probes).
func addCommands(root *cobra.Command, stats *selfStats) {
	root.AddCommand(newRunCmd(), newReproCmd(), newCheckCmd(), newReportCmd(), newBundleCmd(), newSoakCmd(stats), newWatchCmd(),
		newFaultsCmd(), newProbesCmd(), newSimCmd())
	root.AddCommand(newDoctorCmd())
}

// targetFlags choose and describe the target of run and soak.
type targetFlags struct {
	kind        string
	router      string
	metrics     []string
	engines     []string
	debugHooks  bool
	procs       []string
	allowRemote bool
	checkAnswer bool
	results     string
	bootstrap   string
	routeListen string

	// ext is the external target once built: a soak's runs share it, so
	// the interposed hops listen on the same addresses every run (decode
	// and prefill cache them).
	ext *target.External
}

func (f *targetFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "target", "", "bundled (in-process engine), procs (engine as role processes) or external; empty: the scenario's")
	fl.StringVar(&f.router, "router", "", "external: router base URL")
	fl.StringSliceVar(&f.metrics, "metrics", nil, "external: engine /metrics URL (repeatable)")
	fl.StringSliceVar(&f.engines, "engine-url", nil, "external: engine base URL serving /debug/rooms (optional, repeatable)")
	fl.BoolVar(&f.debugHooks, "debug-hooks", false, "external: engines serve /debug/hooks (the bundled engine does)")
	fl.StringArrayVar(&f.procs, "proc", nil, "external: ROLE=PATTERN, a role's process on this host for stop/continue faults on its whole tree: "+
		"a regexp matched against /proc/*/cmdline, or a pid (repeatable; restart is unsupported)")
	fl.StringVar(&f.bootstrap, "bootstrap", "", "external: prefill's bootstrap server URL (http://host:8998); pdchaos reads the topology from /route, "+
		"serves a /route rewriter and proxies every control link (both directions), so protocol and network faults apply; point decode at the rewriter "+
		"(router: --prefill URL 9998)")
	fl.StringVar(&f.routeListen, "route-listen", "", "external with --bootstrap: loopback host:port of the /route rewriter (default "+target.DefaultRouteListen+")")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow non-loopback target addresses")
	fl.BoolVar(&f.checkAnswer, "check-answers", false, "external: check answers against pdchaos's fake model")
	fl.StringVar(&f.results, "results", "runs", "directory for run directories")
}

// args are the target flags as given, in one canonical form, for the repro
// line and repro.yaml: every flag that chose or described the target.
func (f *targetFlags) args() []string {
	var out []string
	if f.kind != "" {
		out = append(out, "--target="+f.kind)
	}
	if f.router != "" {
		out = append(out, "--router="+f.router)
	}
	for _, m := range f.metrics {
		out = append(out, "--metrics="+m)
	}
	for _, e := range f.engines {
		out = append(out, "--engine-url="+e)
	}
	for _, p := range f.procs {
		out = append(out, "--proc="+p)
	}
	if f.bootstrap != "" {
		out = append(out, "--bootstrap="+f.bootstrap)
	}
	if f.routeListen != "" {
		out = append(out, "--route-listen="+f.routeListen)
	}
	for _, b := range []struct {
		on   bool
		name string
	}{{f.debugHooks, "--debug-hooks"}, {f.allowRemote, "--allow-remote"}, {f.checkAnswer, "--check-answers"}} {
		if b.on {
			out = append(out, b.name)
		}
	}
	return out
}

// parseTargetArgs reads recorded target flags (from repro.yaml or a
// bundle) back into targetFlags.
func parseTargetArgs(args []string) (targetFlags, error) {
	var tf targetFlags
	cmd := &cobra.Command{}
	tf.register(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		return tf, fmt.Errorf("recorded target flags %q: %w", args, err)
	}
	return tf, nil
}

// source builds the target source for a scenario.
func (f *targetFlags) source(sc *harness.Scenario, errw io.Writer) (target.Source, bool, error) {
	kind := f.kind
	if kind == "" {
		kind = sc.Target
	}
	if kind != "external" && (f.bootstrap != "" || f.routeListen != "") {
		return nil, false, fmt.Errorf("--bootstrap and --route-listen describe an external target (--target external), not %q", kind)
	}
	switch kind {
	case "", "bundled":
		return target.Bundled{}, false, nil
	case "procs":
		bin, err := os.Executable()
		if err != nil {
			return nil, false, fmt.Errorf("procs target: find the pdchaos binary: %w", err)
		}
		return target.ProcsSource{Bin: bin, Log: io.Discard}, false, nil
	case "external":
		ext, err := f.external()
		if err != nil {
			return nil, false, err
		}
		ext.Log = errw
		return target.ExternalSource{Target: ext}, !f.checkAnswer, nil
	}
	return nil, false, fmt.Errorf("--target %q: want bundled, procs or external", kind)
}

// external builds the external target from the flags, refusing
// non-loopback addresses without --allow-remote.
func (f *targetFlags) external() (*target.External, error) {
	if f.ext != nil {
		return f.ext, nil
	}
	addrs := append([]string{f.router}, f.metrics...)
	addrs = append(addrs, f.engines...)
	if f.bootstrap != "" {
		addrs = append(addrs, f.bootstrap)
	}
	for i, a := range addrs {
		addrs[i] = hostOf(a)
	}
	if err := checkLoopback(f.allowRemote, "target address", addrs...); err != nil {
		return nil, err
	}
	ext := &target.External{Router: f.router, Metrics: f.metrics, Engines: f.engines, DebugHooks: f.debugHooks,
		Bootstrap: f.bootstrap, RouteListen: f.routeListen}
	for _, p := range f.procs {
		role, pat, ok := strings.Cut(p, "=")
		if !ok || role == "" || pat == "" {
			return nil, fmt.Errorf("--proc %q: want ROLE=PATTERN (a regexp over command lines, or a pid)", p)
		}
		if ext.Procs == nil {
			ext.Procs = map[string]string{}
		}
		ext.Procs[role] = pat
	}
	if err := ext.Validate(); err != nil {
		return nil, err
	}
	f.ext = ext
	return ext, nil
}

// hostOf strips a URL down to host:port for checkLoopback.
func hostOf(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	if i := strings.IndexByte(u, '/'); i >= 0 {
		u = u[:i]
	}
	return u
}

// scenarioArg is the scenario to run: the argument, or with none the
// preset that catches the single regression asked for.
func scenarioArg(args, regressions []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if len(regressions) != 1 {
		return "", fmt.Errorf("name a scenario file or preset (or exactly one --regression to run the preset that catches it)")
	}
	r, ok := contract.LookupRegression(regressions[0])
	if !ok {
		_, err := contract.ParseRegressions(regressions)
		return "", fmt.Errorf("--regression: %w", err)
	}
	return r.Caught.Scenario, nil
}

// loadScenario reads a file or a preset name.
func loadScenario(name string) (*harness.Scenario, error) {
	return harness.LoadScenario(name, scenarios.FS)
}

func newRunCmd() *cobra.Command {
	var tf targetFlags
	var seed uint64
	var regressions []string
	var profile string
	var eo engineOverrides
	cmd := &cobra.Command{
		Use:   "run SCENARIO|PRESET",
		Short: "Run one scenario, judge it, write runs/<scenario>-<seed>-<time>/ and exit 0 pass, 1 violation, 2 inconclusive, 3 harness error",
		Long: "Run one scenario, judge it, write runs/<scenario>-<seed>-<time>/ and exit 0 pass, 1 violation, 2 inconclusive, 3 harness error.\n\n" +
			"With one --regression and no scenario, runs the preset that catches that regression (see 'pdchaos engine --regression list').\n" +
			"--profile sglang-nixl|sglang-mooncake switches on the races SGLang's default build of that backend still has, and its wire " +
			"(see 'pdchaos engine --profile list' and docs/sglang.md).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := scenarioArg(args, regressions)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			sc, err := loadScenario(name)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if len(regressions) > 0 {
				// Switch known races on in the bundled engine; repro.yaml
				// records them with the rest of the resolved scenario.
				if _, err := contract.ParseRegressions(regressions); err != nil {
					return &exitError{exitHarness, fmt.Errorf("--regression: %w", err)}
				}
				sc.Engine.Regressions = append(sc.Engine.Regressions, regressions...)
			}
			if err := sc.SetProfile(profile); err != nil {
				return &exitError{exitHarness, err}
			}
			if err := eo.apply(sc); err != nil {
				return &exitError{exitHarness, err}
			}
			src, noCheck, err := tf.source(sc, cmd.ErrOrStderr())
			if err != nil {
				return &exitError{exitHarness, err}
			}
			res, err := runOne(cmd.Context(), cmd.OutOrStdout(), sc, seed, src, noCheck, tf.results, tf.args())
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if res.ExitCode != exitPass {
				return &exitError{res.ExitCode, res.Err()}
			}
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed for agents, load and faults (0: the scenario's, else a fresh one)")
	cmd.Flags().StringArrayVar(&regressions, "regression", nil, "bundled engine: switch on a known regression (repeatable; see 'pdchaos engine --regression list')")
	cmd.Flags().StringVar(&profile, "profile", "", profileFlagHelp())
	eo.register(cmd)
	return cmd
}

// runOne runs a scenario with a live status line and prints the verdict table.
func runOne(ctx context.Context, out io.Writer, sc *harness.Scenario, seed uint64, src target.Source,
	noCheck bool, results string, targetArgs []string) (*harness.Result, error) {
	st := newStatusLine(out)
	defer st.done()
	res, err := harness.Run(ctx, harness.RunOptions{Scenario: sc, Seed: seed, Source: src, ResultsDir: results,
		NoAnswerCheck: noCheck, TargetArgs: targetArgs,
		Progress: func(p harness.Progress) {
			st.set(fmt.Sprintf("%s seed %d  %-8s %5.1fs  req %d ok %d cancel %d err %d hung %d  faults %d  busy %g  wedges %d",
				p.Scenario, p.Seed, p.Phase, p.Elapsed.Seconds(), p.Agents.Started, p.Agents.Completed,
				p.Agents.Cancelled(), p.Agents.Errors, p.Agents.Hung, p.Faults, p.Busy, p.Wedges))
		},
		OnWedge: func(w check.Wedge) { st.line(w.String()) },
		OnNote:  func(s string) { st.line(s) },
	})
	st.done()
	if err != nil {
		return nil, err
	}
	res.PrintTable(out)
	return res, nil
}

func newWatchCmd() *cobra.Command {
	var (
		metrics     []string
		window      time.Duration
		interval    time.Duration
		forD        time.Duration
		allowRemote bool
		gauges      string
	)
	cmd := &cobra.Command{
		Use:   "watch --metrics URL...",
		Short: "Watch a deployment's metrics and exit 1 at the first wedge (a PD gauge stuck > 0 with no progress); 0 when --for ends with none, 2 when scrapes failed too often to say",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(metrics) == 0 {
				return &exitError{exitHarness, errors.New("watch: give at least one --metrics URL")}
			}
			hosts := make([]string, len(metrics))
			for i, m := range metrics {
				hosts[i] = hostOf(m)
			}
			if err := checkLoopback(allowRemote, "--metrics", hosts...); err != nil {
				return &exitError{exitHarness, err}
			}
			if window < 0 || interval < 0 {
				return &exitError{exitHarness, fmt.Errorf("watch: --window %v and --interval %v must not be negative", window, interval)}
			}
			ctx := cmd.Context()
			// An unreachable or non-Prometheus URL is a harness error (exit
			// 3), not "no wedge": a watch that sees nothing proves nothing.
			for _, m := range metrics {
				if err := probeMetrics(ctx, m); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			src, err := watchGauges(ctx, gauges, metrics)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if interval == 0 {
				interval = defaultWatchInterval
			}
			win, line := watchWindow(src, window, interval)
			fmt.Fprintln(cmd.ErrOrStderr(), "watch:", line)
			window = win
			if forD > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, forD)
				defer cancel()
			}
			ctx, stop := context.WithCancelCause(ctx)
			defer stop(nil)
			out := cmd.OutOrStdout()
			var wedged []check.Wedge
			seen, err := record.Watch(ctx, metrics, record.WatchOptions{Interval: interval, Window: window, LiveLoads: src.LiveLoads}, func(w check.Wedge) {
				fmt.Fprintln(out, w)
				wedged = append(wedged, w)
				stop(errors.New("wedged"))
			}, func(err error) { fmt.Fprintln(cmd.ErrOrStderr(), "watch:", err) })
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if len(wedged) > 0 {
				return &exitError{exitViolation, fmt.Errorf("%s", wedged[0])}
			}
			// No wedge seen proves nothing about the time the watch could
			// not see: a URL whose scrapes failed makes it inconclusive.
			var blind []string
			for _, m := range metrics {
				if why := seen[m].Inconclusive(m, window); why != "" {
					blind = append(blind, why)
				}
			}
			if len(blind) > 0 {
				err := fmt.Errorf("watch: inconclusive: no wedge seen, but %s", strings.Join(blind, "; "))
				fmt.Fprintln(out, err)
				return &exitError{exitInconclusive, err}
			}
			fmt.Fprintln(out, "no wedge")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&metrics, "metrics", nil, "engine /metrics URL (repeatable)")
	fl.DurationVar(&window, "window", 0, "how long a gauge may sit above 0 with no progress (0: 10s, widened past the idle refresh of engines whose gauges are set only when they log stats and that serve no /v1/loads)")
	fl.DurationVar(&interval, "interval", defaultWatchInterval, "scrape period")
	fl.StringVar(&gauges, "gauges", "auto", "when the engines set their queue gauges: auto (ask each engine's server info; SGLang is logged), live, or logged (as SGLang: at its stats logs, idle every 30s)")
	fl.DurationVar(&forD, "for", 0, "stop after this long (0: until Ctrl-C or a wedge)")
	fl.BoolVar(&allowRemote, "allow-remote", false, "allow non-loopback metrics URLs")
	return cmd
}

func newFaultsCmd() *cobra.Command {
	faultsCmd := &cobra.Command{Use: "faults", Short: "Fault utilities"}
	var engines []string
	var allowRemote, leftovers bool
	reset := &cobra.Command{
		Use:   "reset [--engine-url URL...] [--leftovers]",
		Short: "Clear what a crashed run left: resume every paused engine hook, end role processes whose harness died",
		Long: "Clear what a crashed run left behind.\n\n" +
			"--engine-url URL resumes every paused hook of that engine (repeatable).\n" +
			"--leftovers finds role processes started by a pdchaos harness that no longer runs (by the --run-label\n" +
			"every harness puts on its roles), continues them if stopped and ends them. Processes of a run in\n" +
			"progress are never touched.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(engines) == 0 && !leftovers {
				return &exitError{exitHarness, errors.New("faults reset: give --engine-url URL (repeatable), --leftovers, or both")}
			}
			out := cmd.OutOrStdout()
			if len(engines) > 0 {
				hosts := make([]string, len(engines))
				for i, e := range engines {
					hosts[i] = hostOf(e)
				}
				if err := checkLoopback(allowRemote, "--engine-url", hosts...); err != nil {
					return &exitError{exitHarness, err}
				}
				t := &target.External{Router: "http://unused", Metrics: []string{"unused"}, Engines: engines, DebugHooks: true}
				if err := target.Reset(cmd.Context(), t); err != nil {
					return &exitError{exitHarness, err}
				}
				fmt.Fprintln(out, "reset: every engine hook resumed")
			}
			if leftovers {
				ls, err := process.FindLeftovers("/proc")
				if err != nil {
					return &exitError{exitHarness, err}
				}
				for _, l := range ls {
					fmt.Fprintf(out, "leftover: pid %d state %c run %s (harness pid %d gone): %s\n", l.PID, l.State, l.Label, l.HarnessPID, l.Cmdline)
				}
				if err := process.EndLeftovers(cmd.Context(), ls, 2*time.Second); err != nil {
					return &exitError{exitHarness, err}
				}
				fmt.Fprintf(out, "reset: %d leftover role process(es) ended\n", len(ls))
			}
			return nil
		},
	}
	reset.Flags().StringSliceVar(&engines, "engine-url", nil, "engine base URL serving /debug/hooks (repeatable)")
	reset.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow non-loopback engine URLs")
	reset.Flags().BoolVar(&leftovers, "leftovers", false, "end role processes whose pdchaos harness is gone (found by their run label)")
	faultsCmd.AddCommand(reset, newFaultsListCmd())
	return faultsCmd
}

// probeMetrics scrapes url once, as every round of the watch will: bounded,
// and refusing what the checks cannot judge (not Prometheus text, NaN,
// negative or duplicate series).
func probeMetrics(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	if _, err := record.ScrapeOnce(ctx, &http.Client{Transport: tr}, url); err != nil {
		if strings.Contains(err.Error(), ": status ") {
			return fmt.Errorf("watch: %w (is the engine started with --enable-metrics?)", err)
		}
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}
