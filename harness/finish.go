package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/reports"
)

// drainAndProbe waits (polling, bounded by the drain deadline) until every
// gauge is 0 and no room is held, then sends the liveness probes.
func (r *runner) drainAndProbe(ctx context.Context, t target.Target, c CheckSpec) {
	r.phaseEvent(PhaseDrain)
	start := r.log.Since()
	deadline := time.NewTimer(c.DrainDeadline)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	d := check.Drain{}
	for {
		settled, ok, busy := r.rec.Settled(start)
		if ok && settled {
			d.Settled = true
			break
		}
		d.Reason = busy
		stop := false
		select {
		case <-ctx.Done():
			d.Reason = "interrupted: " + busy
			stop = true
		case <-deadline.C:
			d.Reason = fmt.Sprintf("not settled after %v: %s", c.DrainDeadline, busy)
			stop = true
		case <-poll.C:
		}
		if stop {
			break
		}
	}
	d.Waited = r.log.Since() - start
	r.log.Add(check.Event{Type: check.EvDrain, Drain: &d})
	if ctx.Err() != nil {
		return
	}
	r.phaseEvent(PhaseJudge)
	r.probe(ctx, t.Endpoint(), c)
	// Let the probes' own rooms clear before the final scrape (longer where
	// gauges may be stale: see GaugeTiming).
	wait := time.NewTimer(max(r.settle, probeSettle))
	defer wait.Stop()
	mark := r.log.Since()
	for {
		if settled, ok, _ := r.rec.Settled(mark); ok && settled {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
			return
		case <-poll.C:
		}
	}
}

// probe sends c.Probes fresh chat completions at once through the router and
// checks each answer against the model.
func (r *runner) probe(ctx context.Context, endpoint string, c CheckSpec) {
	client := &http.Client{}
	defer client.CloseIdleConnections()
	var g errgroup.Group
	for i := range c.Probes {
		g.Go(func() error {
			start := time.Now()
			err := probeOnce(ctx, client, endpoint, r.sc.Engine.Model, r.seed, i, c.ProbeDeadline, !r.o.NoAnswerCheck)
			p := check.Probe{OK: err == nil, Latency: time.Since(start)}
			if err != nil {
				p.Error = err.Error()
			}
			r.log.Add(check.Event{Type: check.EvProbe, Probe: &p})
			return nil
		})
	}
	_ = g.Wait()
}

// probeOnce sends one non-streaming chat completion and checks the answer.
func probeOnce(ctx context.Context, client *http.Client, endpoint, modelName string, seed uint64, i int,
	deadline time.Duration, check bool) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	msgs := []model.Message{{Role: "user", Content: fmt.Sprintf("pdchaos liveness probe %d of run %d: say something", i, seed)}}
	const maxTokens = 8
	if modelName == "" {
		modelName = "pdchaos"
	}
	body, _ := json.Marshal(map[string]any{"model": modelName, "messages": msgs, "max_tokens": maxTokens, "stream": false})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(endpoint, "/")+contract.PathChatCompletions, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("probe %d: %w", i, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("probe %d: no answer within %v", i, deadline)
		}
		return fmt.Errorf("probe %d: %w", i, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("probe %d: read answer: %w", i, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %d: status %d: %.200s", i, resp.StatusCode, b)
	}
	var cr struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) == 0 {
		return fmt.Errorf("probe %d: malformed answer %.200q", i, b)
	}
	if check {
		if err := agents.ModelCheck(msgs, maxTokens, cr.Choices[0].Message.Content); err != nil {
			return fmt.Errorf("probe %d: %w", i, err)
		}
	}
	return nil
}

// progressLoop reports live figures until ctx ends.
func (r *runner) progressLoop(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var busy float64
		for _, s := range r.rec.Latest() {
			for _, g := range contract.SlotGauges() {
				busy += s.Gauges[g]
			}
		}
		phase := PhaseWarmup
		applied := 0
		for _, ev := range r.log.Events() {
			switch {
			case ev.Phase != "":
				phase = ev.Phase
			case ev.Fault != nil && ev.Fault.Applied && ev.Fault.End == 0:
				applied++
			}
		}
		r.o.Progress(Progress{Scenario: r.sc.Name, Seed: r.seed, Phase: phase, Elapsed: r.log.Since(),
			Agents: r.swarm.Stats(), Faults: applied, Wedges: len(r.rec.Wedges()), Busy: busy})
	}
}

// leakCheck counts goroutines left after the in-process target closed. It
// assumes one run per process (the CLI's case): goroutines of a concurrent
// run would be counted too.
func (r *runner) leakCheck() {
	if !r.src.InProcess() {
		r.log.Add(check.Event{Type: check.EvLeaks, Leaks: &check.Leaks{Detail: "skipped: the " + r.src.Kind() + " target's goroutines live in other processes"}})
		return
	}
	l := check.Leaks{Checked: true}
	if err := goleak.Find(r.ignore, goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop")); err != nil {
		l.Leaked = strings.Count(err.Error(), "Goroutine ")
		if l.Leaked == 0 {
			l.Leaked = 1
		}
		l.Detail = err.Error()
		if len(l.Detail) > 4000 {
			l.Detail = l.Detail[:4000] + "…"
		}
	}
	r.log.Add(check.Event{Type: check.EvLeaks, Leaks: &l})
}

// finish judges, then writes result.json (first), events.jsonl and repro.yaml.
func (r *runner) finish(ctx context.Context, res *Result, herr error) {
	interrupted := ctx.Err() != nil
	end := check.EndInfo{Interrupted: interrupted}
	if herr != nil {
		end.Error = herr.Error()
	}
	r.log.Add(check.Event{Type: check.EvEnd, End: &end})
	evs := r.log.Events()
	res.Duration = time.Since(r.base)
	res.Interrupted = interrupted
	res.Checks, res.Verdict = JudgeLog(evs, r.sc.Checks)
	if herr != nil {
		res.HarnessError = herr.Error()
	}
	v := check.NewView(evs)
	res.Faults, res.Wedges, res.Drain = v.Faults, v.Wedges, v.Drain
	res.Probes = v.ProbeHits()
	if r.swarm != nil {
		res.Agents = r.swarm.Stats()
	}
	p := r.phase
	res.Phases = phaseStats(v.Outcomes, []PhaseStats{
		{Name: PhaseWarmup, Start: 0, End: p.ready},
		{Name: PhaseFaults, Start: p.ready, End: p.faultsEnd},
		{Name: PhaseRecovery, Start: p.faultsEnd, End: max(p.loadEnd, p.faultsEnd)},
	})
	res.ExitCode = ExitCodeFor(res.Verdict)
	if res.Verdict == check.Fail {
		res.FirstFailure = res.Checks.Error()
	}
	if err := res.WriteJSON(); err != nil && res.HarnessError == "" {
		res.HarnessError = err.Error()
	}
	if err := r.log.Close(); err != nil && res.HarnessError == "" {
		res.HarnessError = err.Error()
	}
	if err := r.writeRepro(res, true); err != nil && res.HarnessError == "" {
		res.HarnessError = err.Error()
	}
	if !r.o.NoReport {
		if err := reports.RenderDir(r.dir); err != nil {
			res.ReportError = err.Error()
		}
	}
}

// writeRepro writes repro.yaml: the resolved scenario with the run's seed,
// under a header naming the repro command, the target flags (ArgsLine) and
// whether the run had finished. It is written when the run starts and
// again when it ends.
func (r *runner) writeRepro(res *Result, done bool) error {
	sc := *r.sc
	sc.Seed = r.seed
	b, err := sc.YAML()
	if err != nil {
		return fmt.Errorf("encode repro.yaml: %w", err)
	}
	status := "running (written at start; a run killed now left no verdict)"
	if done {
		status = "finished, verdict " + string(res.Verdict)
		if res.Verdict == "" {
			status = "finished with a harness error"
		}
	}
	args, _ := json.Marshal(res.Args)
	hdr := fmt.Sprintf("# pdchaos repro: scenario %s, seed %d, target %s, regressions %v\n# status: %s\n%s%s\n# %s\n",
		sc.Name, r.seed, r.src.Kind(), sc.Engine.Regressions, status, reports.ArgsLine, args, res.Repro)
	if err := os.WriteFile(filepath.Join(r.dir, "repro.yaml"), append([]byte(hdr), b...), 0o644); err != nil {
		return fmt.Errorf("write repro.yaml: %w", err)
	}
	return nil
}
