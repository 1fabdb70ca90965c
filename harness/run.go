package harness

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
	"github.com/pdchaos/pdchaos/harness/target"
)

// Run phases, as logged and reported.
const (
	PhaseWarmup   = "warmup"
	PhaseFaults   = "faults"
	PhaseRecovery = "recovery"
	PhaseDrain    = "drain"
	PhaseJudge    = "judge"
)

// RunOptions configure one run.
type RunOptions struct {
	// Scenario is what to run (validated).
	Scenario *Scenario
	// Seed overrides the scenario's seed when non-zero; if both are 0 a
	// fresh seed is drawn (and printed in the result and repro).
	Seed uint64
	// Source opens the target; nil means Bundled.
	Source target.Source
	// ResultsDir holds run directories; empty means "runs".
	ResultsDir string
	// NoAnswerCheck skips integrity checks (a real model's answers are not
	// computable); set it for external deployments that are not pdchaos.
	NoAnswerCheck bool
	// Progress, if set, is called about twice a second with live figures.
	Progress func(Progress)
	// OnWedge, if set, is called the moment the watchdog flags a wedge.
	OnWedge func(check.Wedge)
	// TargetArgs are the command-line flags that chose and described the
	// target (--target, --router, --metrics, …), recorded in the repro
	// line and in repro.yaml so a replay reaches the same target.
	TargetArgs []string
	// NoReport skips report.html and junit.xml (tests that only judge).
	NoReport bool
	// OnNote, if set, gets lines a person should see as the run goes, such
	// as the gauge timing and windows the run chose (GaugeTiming.String).
	OnNote func(string)
}

// Progress is the live status of a run.
type Progress struct {
	Scenario string
	Seed     uint64
	Phase    string
	Elapsed  time.Duration
	Agents   agents.Stats
	Faults   int // windows applied so far
	Wedges   int
	Busy     float64 // sum of slot gauges over engines, last scrape
}

// NewSeed draws a fresh run seed from the OS (never the global rand).
func NewSeed() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// stream is the PCG stream of a scenario, so two scenarios with one seed differ.
func stream(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// Run executes one scenario end to end and judges it. The error is non-nil
// only for harness errors (bad input, target unreachable); a violation is a
// Result with verdict fail. Results are written to the run directory on
// every exit path, including ctx cancel (Ctrl-C), with faults healed first.
func Run(ctx context.Context, o RunOptions) (res *Result, err error) {
	sc := o.Scenario
	if sc == nil {
		return nil, errors.New("run: no scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("run %s: %w", sc.Name, err)
	}
	src := o.Source
	if src == nil {
		src = target.Bundled{}
	}
	seed := o.Seed
	if seed == 0 {
		seed = sc.Seed
	}
	if seed == 0 {
		seed = NewSeed()
	}
	if !src.SetsEngine() && len(sc.Engine.Regressions) > 0 {
		return nil, fmt.Errorf("run %s: scenario switches on regressions %v but the %s target does not run the bundled engine",
			sc.Name, sc.Engine.Regressions, src.Kind())
	}
	dirRoot := o.ResultsDir
	if dirRoot == "" {
		dirRoot = "runs"
	}
	started := time.Now()
	dir := filepath.Join(dirRoot, fmt.Sprintf("%s-%d-%s", sc.Name, seed, started.Format("20060102-150405.000")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run %s: create run dir: %w", sc.Name, err)
	}
	r := &runner{o: o, sc: sc, src: src, seed: seed, dir: dir, base: started}
	if src.InProcess() {
		r.ignore = goleak.IgnoreCurrent()
	}
	res = &Result{Scenario: sc.Name, Seed: seed, Target: src.Kind(), RunDir: dir, Started: started,
		Regressions: sc.Engine.Regressions, Versions: Versions(ctx), Args: targetArgs(o.TargetArgs, src.Kind()),
		Repro: ReproLine(filepath.Join(dir, "repro.yaml"), seed, targetArgs(o.TargetArgs, src.Kind()))}
	// repro.yaml first, so a run killed at any point can still be replayed.
	if err := r.writeRepro(res, false); err != nil {
		return nil, fmt.Errorf("run %s: %w", sc.Name, err)
	}
	if r.log, err = record.NewEventLog(filepath.Join(dir, "events.jsonl"), started); err != nil {
		return nil, fmt.Errorf("run %s: %w", sc.Name, err)
	}
	herr := r.execute(ctx, res)
	r.finish(ctx, res, herr)
	return res, nil
}

// runner holds one run's state.
type runner struct {
	o      RunOptions
	sc     *Scenario
	src    target.Source
	seed   uint64
	dir    string
	base   time.Time
	log    *record.EventLog
	ignore goleak.Option
	rec    *record.Recorder
	swarm  *agents.Swarm
	faults []schedule.Record
	phase  phaseTimes
	settle time.Duration // the probe settle window (GaugeTiming.ProbeSettle)
}

// phaseTimes are the offsets at which phases began.
type phaseTimes struct{ ready, faultsEnd, loadEnd time.Duration }

func (r *runner) phaseEvent(name string) {
	r.log.Add(check.Event{Type: check.EvPhase, Phase: name})
}

// execute runs everything up to the judgement; the target is closed and
// every fault healed when it returns.
func (r *runner) execute(ctx context.Context, res *Result) (herr error) {
	sc := r.sc
	cfg := sc.Engine
	if cfg.Seed == 0 {
		cfg.Seed = r.seed
	}
	t, err := r.src.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open %s target: %w", r.src.Kind(), err)
	}
	closed := false
	closeTarget := func() error {
		if closed {
			return nil
		}
		closed = true
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		return t.Close(cctx)
	}
	defer func() { _ = closeTarget() }()
	hctx, hcancel := context.WithTimeout(ctx, target.HealthTimeout+5*time.Second)
	res.Health = target.ProbeHealth(hctx, t.Endpoint(), target.EngineBases(t))
	hcancel()
	var layers []string
	for _, l := range target.Layers(t) {
		layers = append(layers, string(l))
	}
	info := &check.RunInfo{Scenario: sc.Name, Seed: r.seed, Target: r.src.Kind(), BaseWall: r.base, Layers: layers, AnswersUnchecked: r.o.NoAnswerCheck}
	if resolved, _, err := cfg.Resolve(); err == nil && r.src.Kind() != "external" {
		info.Engine = &resolved // the deadlines and regressions timeouts-explained judges by
	}
	r.log.Add(check.Event{Type: check.EvRun, Run: info})
	if err := target.RequireLayers(t, sc.Layers()); err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	net := network.New()
	netClosed := false
	closeNet := func() error {
		if netClosed {
			return nil
		}
		netClosed = true
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := net.Close(cctx); err != nil {
			return fmt.Errorf("close network faults: %w", err)
		}
		return nil
	}
	defer func() {
		if cerr := closeNet(); cerr != nil && herr == nil {
			herr = cerr
		}
	}()
	rng := rand.New(rand.NewPCG(r.seed, stream(sc.Name)))
	entries, err := BuildSchedule(sc.Faults, rng, net)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	for _, e := range entries {
		if p, ok := e.Fault.(faults.Preflighter); ok {
			if err := p.Preflight(t); err != nil {
				return fmt.Errorf("scenario %s: the target cannot take fault %s: %w", sc.Name, e.Fault.Name(), err)
			}
		}
	}
	opts, _ := sc.AgentOptions()
	opts.Duration = sc.Duration
	warm := opts.StartSpread + opts.WarmUp
	tl, err := schedule.Plan(r.seed, entries, max(sc.Duration-warm, time.Millisecond))
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	// Clear what a crashed earlier run may have left (paused gates, stopped roles).
	if err := faults.Reset(ctx, t); err != nil {
		return fmt.Errorf("reset target before the run: %w", err)
	}
	checks := sc.Checks.withDefaults()
	timing := decideGaugeTiming(ctx, r.src.SetsEngine(), sc.Engine, t.MetricsURLs(), checks)
	checks.WedgeWindow, checks.DrainDeadline, r.settle = timing.WedgeWindow, timing.DrainDeadline, timing.ProbeSettle
	res.Gauges = &timing
	if r.o.OnNote != nil {
		r.o.OnNote(timing.String())
	}
	deadlines, margin := roomDeadlines(r.src.Kind(), sc.Engine)
	r.rec = &record.Recorder{Target: t, Log: r.log, Interval: checks.ScrapeInterval,
		Watchdog:  &record.Watchdog{Window: checks.WedgeWindow, Deadlines: deadlines, Margin: margin, BaseWall: r.base},
		OnWedge:   r.o.OnWedge,
		LiveLoads: timing.LiveLoads}
	defer r.rec.Close()
	var answers agents.CheckFunc
	if !r.o.NoAnswerCheck {
		answers = agents.ModelCheck
	}
	sink := func(out outcome.Outcome) { r.log.Add(check.Event{T: out.End, Type: check.EvOutcome, Outcome: &out}) }
	var abortURLs []string
	if opts.AbortRequestRate > 0 {
		for _, b := range target.EngineBases(t) {
			abortURLs = append(abortURLs, agents.AbortURL(b))
		}
	}
	r.swarm, err = agents.New(agents.Config{Endpoint: t.Endpoint(), Model: cfg.Model, Seed: r.seed, Options: opts,
		Base: r.base, Sink: sink, Check: answers, AbortURLs: abortURLs})
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}

	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	r.rec.Once(ctx) // the baseline slots-released compares with: before any load
	bg, bgCtx := errgroup.WithContext(recCtx)
	bg.Go(func() error { return r.rec.Run(bgCtx) })
	if r.o.Progress != nil {
		bg.Go(func() error { r.progressLoop(bgCtx); return nil })
	}
	defer func() { stopRec(); _ = bg.Wait() }()

	r.phaseEvent(PhaseWarmup)
	if err := r.load(ctx, t, tl); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // interrupted: finish writes what was gathered
	}
	r.drainAndProbe(ctx, t, checks)
	stopRec()
	_ = bg.Wait()
	r.rec.Once(context.WithoutCancel(ctx))
	r.rec.FinalRooms(context.WithoutCancel(ctx))
	r.rec.FinalProbes(context.WithoutCancel(ctx), append(append([]string{}, t.EngineURLs()...), t.Endpoint()))
	if err := closeNet(); err != nil {
		return err
	}
	if err := closeTarget(); err != nil {
		return fmt.Errorf("close target: %w", err)
	}
	r.leakCheck()
	return nil
}

// load runs agents (and open-loop load) for the scenario's duration while
// the fault player plays the timeline from the end of warm-up.
func (r *runner) load(ctx context.Context, t target.Target, tl schedule.Timeline) error {
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	if err := r.swarm.Start(loadCtx); err != nil {
		return fmt.Errorf("start agents: %w", err)
	}
	g, gctx := errgroup.WithContext(loadCtx)
	if ol := r.sc.OpenLoop; ol != nil {
		g.Go(func() error {
			var answers agents.CheckFunc
			if !r.o.NoAnswerCheck {
				answers = agents.ModelCheck
			}
			return agents.RunOpenLoop(gctx, agents.OpenLoopConfig{Endpoint: t.Endpoint(), Model: r.sc.Engine.Model,
				Seed: r.seed, Options: *ol, Base: r.base, Check: answers,
				Sink: func(out outcome.Outcome) { r.log.Add(check.Event{T: out.End, Type: check.EvOutcome, Outcome: &out}) }})
		})
	}
	select {
	case <-r.swarm.Ready():
	case <-r.swarm.Done():
	case <-ctx.Done():
	}
	r.phase.ready = r.log.Since()
	playCtx, stopPlay := context.WithCancel(ctx)
	defer stopPlay()
	playDone := make(chan struct{})
	var playErr error
	if len(tl.Windows) > 0 && ctx.Err() == nil {
		r.phaseEvent(PhaseFaults)
		p := &schedule.Player{Target: t, Timeline: tl,
			OnStart: func(rec schedule.Record) { r.logFault(rec) },
			OnEnd:   func(rec schedule.Record) { r.logFault(rec) }}
		g.Go(func() error {
			defer close(playDone)
			recs, err := p.Play(playCtx, r.base.Add(r.phase.ready))
			for _, rec := range recs {
				r.logFault(rec) // final record of every window (errors, heals on exit)
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				playErr = err
			}
			r.phase.faultsEnd = r.log.Since()
			r.phaseEvent(PhaseRecovery)
			return nil
		})
	} else {
		close(playDone)
		r.phase.faultsEnd = r.phase.ready
	}
	select {
	case <-r.swarm.Done():
	case <-ctx.Done():
	}
	stopPlay() // heals whatever is still active
	<-playDone
	stopLoad()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	werr := r.swarm.Wait(wctx)
	gerr := g.Wait()
	r.phase.loadEnd = r.log.Since()
	if playErr != nil {
		r.log.Add(check.Event{Type: check.EvEnd, End: &check.EndInfo{Error: "fault player: " + playErr.Error()}})
	}
	if werr != nil {
		return fmt.Errorf("stop agents: %w", werr)
	}
	if gerr != nil && !errors.Is(gerr, context.Canceled) {
		return fmt.Errorf("open-loop load: %w", gerr)
	}
	return nil
}

// logFault converts a player record to run offsets and logs it.
func (r *runner) logFault(rec schedule.Record) {
	off := r.phase.ready
	rec.PlannedStart += off
	rec.PlannedEnd += off
	rec.Start += off
	if rec.End != 0 {
		rec.End += off
	}
	r.log.Add(check.Event{Type: check.EvFault, Fault: &rec})
}
