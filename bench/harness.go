package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/fakeserver"
)

// HarnessOptions shape the harness benchmark; zero fields get the defaults.
type HarnessOptions struct {
	// Server is the command line of the trivial server run in a child
	// process (so that this process's CPU is the client side only): it
	// prints its base URL on one line and serves until its stdin closes.
	// Required; `pdchaos bench --serve-trivial` is one.
	Server []string
	// Rate is the request rate the swarm and vegeta both send; default 500/s.
	Rate int
	// Requests is how many requests each side completes; default 5000.
	Requests int
	// Agents is the swarm's size at Rate; default 1000.
	Agents int
	// SwarmSizes are the swarms tried for the largest sustained one, each
	// at one request per agent every ThinkTime; default 500, 1000, 2000,
	// 4000, 8000.
	SwarmSizes []int
	// ThinkTime is each agent's pause between requests in the sustained-
	// swarm search; default 4s.
	ThinkTime time.Duration
	// SustainFor is how long each swarm size runs; default 8s.
	SustainFor time.Duration
	// Progress, when set, receives a line per step.
	Progress func(string)
}

func (o HarnessOptions) withDefaults() HarnessOptions {
	if o.Rate <= 0 {
		o.Rate = 500
	}
	if o.Requests <= 0 {
		o.Requests = 5000
	}
	if o.Agents <= 0 {
		o.Agents = 1000
	}
	if len(o.SwarmSizes) == 0 {
		o.SwarmSizes = []int{500, 1000, 2000, 4000, 8000}
	}
	if o.ThinkTime <= 0 {
		o.ThinkTime = 4 * time.Second
	}
	if o.SustainFor <= 0 {
		o.SustainFor = 8 * time.Second
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// ServeTrivial runs the cheapest OpenAI-compatible chat server (answers of
// "tok" pieces), prints its base URL to out and serves until in closes or
// ctx ends.
func ServeTrivial(ctx context.Context, in io.Reader, out io.Writer) error {
	s := fakeserver.New(fakeserver.Options{Trivial: true})
	defer s.Close()
	if _, err := fmt.Fprintln(out, s.URL); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// startServer runs o.Server and returns its URL and a stop function.
func startServer(ctx context.Context, argv []string) (string, func(), error) {
	if len(argv) == 0 {
		return "", nil, errors.New("harness bench: no trivial server command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start trivial server %q: %w", strings.Join(argv, " "), err)
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("trivial server %q printed no URL: %w", strings.Join(argv, " "), err)
	}
	return strings.TrimSpace(line), stop, nil
}

// Harness measures the client CPU per request of the agent swarm against
// vegeta alone at the same rate, both against a trivial server in a child
// process, and the largest swarm this machine sustains with the harness
// under half its CPU.
func Harness(ctx context.Context, o HarnessOptions) ([]Figure, error) {
	o = o.withDefaults()
	url, stop, err := startServer(ctx, o.Server)
	if err != nil {
		return nil, err
	}
	defer stop()

	veg, err := vegetaRun(ctx, url, o.Rate, o.Requests)
	if err != nil {
		return nil, err
	}
	o.Progress(fmt.Sprintf("vegeta alone: %d requests at %d/s, %.0f cpu-µs/req", veg.ok, o.Rate, veg.cpuPerReq()))
	sw, err := swarmRun(ctx, url, o.Agents, time.Second*time.Duration(o.Agents)/time.Duration(o.Rate), o.Requests, 0)
	if err != nil {
		return nil, err
	}
	o.Progress(fmt.Sprintf("swarm of %d: %d requests, %.0f cpu-µs/req (%.2fx vegeta)", o.Agents, sw.ok, sw.cpuPerReq(), sw.cpuPerReq()/veg.cpuPerReq()))
	out := []Figure{
		withRef(Figure{Group: "harness", Name: "harness/swarm-cpu-per-req", Value: sw.cpuPerReq(), Unit: "cpu-µs/req", Better: Lower,
			Note: fmt.Sprintf("%d agents at %d req/s in total, streamed answers, growing context", o.Agents, o.Rate)},
			veg.cpuPerReq(), "vegeta alone"),
	}

	half := float64(runtime.NumCPU()) / 2
	best, bestCores, stoppedBy := 0, 0.0, "every size tried was sustained"
	for _, n := range o.SwarmSizes {
		want := float64(n) / o.ThinkTime.Seconds()
		r, err := swarmRun(ctx, url, n, o.ThinkTime, 0, o.SustainFor)
		if err != nil {
			return out, err
		}
		cores := r.cpu.Seconds() / r.wall.Seconds()
		// The first ThinkTime is the agents' staggered start; judge the rate
		// over the whole window but allow for that ramp.
		got := float64(r.ok) / r.wall.Seconds()
		sustained := cores < half && got >= 0.8*want*(1-o.ThinkTime.Seconds()/(2*o.SustainFor.Seconds()))
		o.Progress(fmt.Sprintf("swarm of %d: %.0f req/s of %.0f wanted, %.2f cores (limit %.1f): sustained=%v", n, got, want, cores, half, sustained))
		if !sustained {
			stoppedBy = fmt.Sprintf("%d agents: %.0f of %.0f req/s at %.2f cores", n, got, want, cores)
			break
		}
		best, bestCores = n, cores
	}
	out = append(out, Figure{Group: "harness", Name: "harness/largest-swarm", Value: float64(best), Unit: "agents", Better: Higher,
		Note: fmt.Sprintf("one request per agent every %s, harness under half of %d CPUs (%.2f cores at that size); next: %s", o.ThinkTime, runtime.NumCPU(), bestCores, stoppedBy)})
	return out, nil
}

func vegetaRun(ctx context.Context, url string, rate, n int) (loadResult, error) {
	body := chatBody(300, 8, true)
	tr := &http.Transport{MaxIdleConnsPerHost: 10000}
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tr}))
	tg := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: url + contract.PathChatCompletions,
		Body: body, Header: http.Header{"Content-Type": {"application/json"}}})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			atk.Stop()
		case <-stop:
		}
	}()
	var res loadResult
	cpu0, t0 := processCPU(), time.Now()
	for r := range atk.Attack(tg, vegeta.Rate{Freq: rate, Per: time.Second}, time.Duration(n)*time.Second/time.Duration(rate), "bench") {
		if r.Error == "" && r.Code == http.StatusOK {
			res.ok++
		} else {
			res.failed++
		}
	}
	res.wall, res.cpu = time.Since(t0), processCPU()-cpu0
	if res.ok == 0 {
		return res, fmt.Errorf("vegeta: no request completed against %s", url)
	}
	return res, ctx.Err()
}

// swarmRun runs agents agents until n requests completed (n > 0) or for d.
func swarmRun(ctx context.Context, url string, agentsN int, think time.Duration, n int, d time.Duration) (loadResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var done atomic.Int64
	s, err := agents.New(agents.Config{Endpoint: url, Seed: 1, Sink: func(o outcome.Outcome) {
		if n > 0 && done.Add(1) == int64(n) {
			cancel()
		}
	}, Options: agents.Options{Agents: agentsN, StartSpread: min(think, time.Second), MaxTokens: 8,
		MaxContextWords: 2000, ThinkTime: think}})
	if err != nil {
		return loadResult{}, fmt.Errorf("swarm: %w", err)
	}
	var res loadResult
	cpu0, t0 := processCPU(), time.Now()
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return res, fmt.Errorf("swarm: %w", err)
	}
	res.wall, res.cpu = time.Since(t0), processCPU()-cpu0
	res.ok = int(s.Stats().Completed)
	if res.ok == 0 {
		return res, fmt.Errorf("swarm of %d: no request completed against %s", agentsN, url)
	}
	return res, nil
}
