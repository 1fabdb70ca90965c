package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// MemoryOptions shape the memory benchmark; zero fields get the defaults.
type MemoryOptions struct {
	// CLI is the pdchaos binary to run the soak, the engine and watch with.
	// Required.
	CLI string
	// Dir holds the soak's results and both stats files. Required.
	Dir string
	// Duration is how long the soak and watch run; default 30m.
	Duration time.Duration
	// Every is the sampling period; default 10s.
	Every time.Duration
	// WarmUp is excluded from the growth figures; default 1m.
	WarmUp time.Duration
	// Progress, when set, receives a line per step.
	Progress func(string)
}

func (o MemoryOptions) withDefaults() MemoryOptions {
	if o.Duration <= 0 {
		o.Duration = 30 * time.Minute
	}
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.WarmUp <= 0 {
		o.WarmUp = min(time.Minute, o.Duration/3)
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Memory runs `pdchaos soak` on the bundled engine and, beside it,
// `pdchaos watch` against an idle `pdchaos engine`, both for Duration with
// their own resources sampled every Every (--self-stats), and reports RSS,
// goroutines and open files after the warm-up, a third of the way and at the
// end, with their growth per minute after the warm-up (which must be flat).
func Memory(ctx context.Context, o MemoryOptions) ([]Figure, error) {
	o = o.withDefaults()
	if o.CLI == "" || o.Dir == "" {
		return nil, errors.New("memory bench: CLI and Dir are required")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory bench: %w", err)
	}
	soakStats, watchStats := filepath.Join(o.Dir, "soak-stats.jsonl"), filepath.Join(o.Dir, "watch-stats.jsonl")
	every := o.Every.String()

	eng, metrics, err := startEngine(ctx, o.CLI)
	if err != nil {
		return nil, err
	}
	defer eng()

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		cmd := exec.CommandContext(gctx, o.CLI, "soak", "--duration", o.Duration.String(), "--results", filepath.Join(o.Dir, "soak"),
			"--self-stats", soakStats, "--self-stats-every", every)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) { // a failing soak run is still a memory sample
				return fmt.Errorf("memory bench: soak: %w", err)
			}
			o.Progress(fmt.Sprintf("soak exited %d (its verdicts are in %s)", ee.ExitCode(), o.Dir))
		}
		return nil
	})
	g.Go(func() error {
		args := []string{"watch", "--for", o.Duration.String(), "--self-stats", watchStats, "--self-stats-every", every}
		for _, m := range metrics {
			args = append(args, "--metrics", m)
		}
		cmd := exec.CommandContext(gctx, o.CLI, args...)
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return fmt.Errorf("memory bench: watch: %w", err)
			}
			o.Progress(fmt.Sprintf("watch exited %d", ee.ExitCode()))
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Figure
	for _, p := range []struct{ name, file string }{{"soak", soakStats}, {"watch", watchStats}} {
		ss, err := ReadSamples(p.file)
		if err != nil {
			return out, err
		}
		if len(ss) == 0 {
			return out, fmt.Errorf("memory bench: %s wrote no sample to %s", p.name, p.file)
		}
		out = append(out, memoryFigures(p.name, ss, o)...)
	}
	return out, nil
}

// memoryFigures reports each resource as its floor (the least reading over
// the window before a point): a soak's in-process engine comes and goes
// with every run, and the floor between runs is what must stay flat.
func memoryFigures(name string, ss []Sample, o MemoryOptions) []Figure {
	var out []Figure
	window := min(time.Minute, o.Duration/3)
	var points []time.Duration
	for _, p := range []time.Duration{o.WarmUp, o.Duration / 3, o.Duration} {
		if len(points) == 0 || p > points[len(points)-1] {
			points = append(points, p)
		}
	}
	for _, m := range []struct {
		what, unit string
		f          func(Sample) float64
	}{
		{"rss", "MiB", func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }},
		{"goroutines", "", func(s Sample) float64 { return float64(s.Goroutines) }},
		{"open-files", "", func(s Sample) float64 { return float64(s.OpenFiles) }},
	} {
		for _, p := range points {
			v, n := floor(ss, p-window, p, m.f)
			out = append(out, Figure{Group: "memory", Name: fmt.Sprintf("memory/%s/%s@%s", name, m.what, short(p)), Value: v,
				Unit: m.unit, Better: Lower, Note: fmt.Sprintf("least of %d samples in the %s before", n, window)})
		}
		sl, n := slope(floorSeries(ss, o.WarmUp, window, m.f))
		out = append(out, Figure{Group: "memory", Name: fmt.Sprintf("memory/%s/%s-growth", name, m.what), Value: sl,
			Unit: strings.TrimSpace(m.unit + "/min"), Better: Lower, Note: fmt.Sprintf("least squares over %d floors of %s after %s", n, window, o.WarmUp)})
	}
	return out
}

// floor is the least f over samples in (from, to], and how many there were.
func floor(ss []Sample, from, to time.Duration, f func(Sample) float64) (float64, int) {
	best, n := math.Inf(1), 0
	for _, s := range ss {
		if s.At > from && s.At <= to {
			best, n = math.Min(best, f(s)), n+1
		}
	}
	if n == 0 {
		return f(at(ss, to)), 1
	}
	return best, n
}

// floorSeries is one floor per window after warm.
func floorSeries(ss []Sample, warm, window time.Duration, f func(Sample) float64) []point {
	var out []point
	end := ss[len(ss)-1].At
	for t := warm + window; t <= end; t += window {
		if v, n := floor(ss, t-window, t, f); n > 0 {
			out = append(out, point{t, v})
		}
	}
	return out
}

func short(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.Round(time.Second).String()
}

// startEngine runs `pdchaos engine` and returns a stop function and the
// /metrics URLs of its two engines.
func startEngine(ctx context.Context, cli string) (func(), []string, error) {
	cmd := exec.CommandContext(ctx, cli, "engine")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("memory bench: start engine: %w", err)
	}
	stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("memory bench: engine printed no ready line: %w", err)
	}
	var ready struct {
		Prefill struct{ HTTP string } `json:"prefill"`
		Decode  struct{ HTTP string } `json:"decode"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Prefill.HTTP == "" || ready.Decode.HTTP == "" {
		stop()
		return nil, nil, fmt.Errorf("memory bench: engine ready line %q: no prefill/decode HTTP address (%v)", strings.TrimSpace(line), err)
	}
	return stop, []string{"http://" + ready.Prefill.HTTP + "/metrics", "http://" + ready.Decode.HTTP + "/metrics"}, nil
}
