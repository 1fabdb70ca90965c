package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// ErrNotRunning is returned by KillAll when the swarm has not started or has
// already stopped, so a fault that verifies its effect can tell a no-op.
var ErrNotRunning = errors.New("agent swarm is not running")

// Config is everything a Swarm needs besides its Options: where to send, the
// seed, and where outcomes go. It is built by the harness, not loaded from a
// scenario file (it holds functions).
type Config struct {
	// Endpoint is the base URL of an OpenAI-compatible server (the router).
	Endpoint string
	// Model is the request's "model" field; empty means "pdchaos".
	Model string
	// Seed drives every decision of every agent.
	Seed uint64
	// Options are the swarm's knobs; zero fields get their defaults.
	Options Options
	// Base is the run's time origin for outcome offsets; zero means the
	// time New is called. Pass the harness's baseTime to share one clock.
	Base time.Time
	// Sink receives every outcome; nil drops them (counters still count).
	Sink Sink
	// Check, when set, checks every completed answer (see ModelCheck).
	Check CheckFunc
	// AbortURLs are the engines' /abort_request URLs (AbortURL of each
	// engine's base URL: prefill's and decode's, never the router's), for
	// cancels Options.AbortRequestRate makes by abort_request; required
	// when that rate is above 0.
	AbortURLs []string
	// Client, when set, is used for every request and left open; when nil
	// the swarm uses its own transport and closes it when it stops.
	Client *http.Client
	// Trace, when set, receives every decision in the order each agent
	// draws it (concurrently across agents).
	Trace func(Decision)
}

// Swarm runs Options.Agents simulated coding agents against one endpoint.
// Start it once; stop it with its context, Options.Duration or Stop; Wait
// returns when every goroutine it started has ended.
type Swarm struct {
	cfg       Config
	opts      Options
	caller    caller
	counters  Counters
	system    entry
	modelJSON []byte
	transport *http.Transport // owned, or nil

	mu      sync.Mutex
	kills   []context.CancelCauseFunc // live incarnation per agent
	running bool
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup
	ready   chan struct{}
	done    chan struct{}
}

// New validates cfg and prepares a swarm (nothing runs until Start).
func New(cfg Config) (*Swarm, error) {
	o := cfg.Options.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new agent swarm: %w", err)
	}
	if cfg.Endpoint == "" {
		return nil, errors.New("new agent swarm: endpoint is empty")
	}
	if o.AbortRequestRate > 0 && len(cfg.AbortURLs) == 0 {
		return nil, fmt.Errorf("new agent swarm: agents option abort_request_rate %v: no engine URL to send /abort_request to (the target names none)", o.AbortRequestRate)
	}
	for _, u := range cfg.AbortURLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("new agent swarm: abort URL %q: not an http(s) URL", u)
		}
	}
	if cfg.Model == "" {
		cfg.Model = "pdchaos"
	}
	if cfg.Base.IsZero() {
		cfg.Base = time.Now()
	}
	s := &Swarm{cfg: cfg, opts: o, ready: make(chan struct{}), done: make(chan struct{}),
		kills: make([]context.CancelCauseFunc, o.Agents)}
	s.modelJSON, _ = json.Marshal(cfg.Model)
	s.system = newEntry("system", SystemPrompt(cfg.Seed, o.SystemPromptWords), o.SystemPromptWords, false)
	client := cfg.Client
	if client == nil {
		s.transport = newTransport(o.Agents * (1 + o.MaxSubRequests))
		client = &http.Client{Transport: s.transport}
	}
	s.caller = caller{client: client, url: strings.TrimRight(cfg.Endpoint, "/") + contract.PathChatCompletions, abortURLs: cfg.AbortURLs,
		base: cfg.Base, hang: o.HangTimeout, check: cfg.Check, counters: &s.counters, sink: cfg.Sink}
	return s, nil
}

// newTransport is a keep-alive transport sized for conns concurrent streams;
// compression is off because gzip would buffer the event stream.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// Options returns the resolved options (defaults applied).
func (s *Swarm) Options() Options { return s.opts }

// SystemPrompt returns the prompt prefix every agent shares.
func (s *Swarm) SystemPrompt() string { return s.system.msg.Content }

// Stats reads the live counters; safe at any time.
func (s *Swarm) Stats() Stats { return s.counters.Snapshot() }

// Ready is closed once every agent has started and WarmUp has passed: the
// moment to inject a fault into a loaded system. It stays open if the swarm
// stops first, so select on Done too.
func (s *Swarm) Ready() <-chan struct{} { return s.ready }

// Done is closed when every goroutine of the swarm has ended.
func (s *Swarm) Done() <-chan struct{} { return s.done }

// Start launches the agents and returns at once. The swarm runs until ctx
// ends, Options.Duration elapses or Stop is called. It may be called once.
func (s *Swarm) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("start agent swarm: already started")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	s.cancel, s.running = cancel, true
	stopTimer := func() bool { return false }
	if s.opts.Duration > 0 {
		t := time.AfterFunc(s.opts.Duration, func() { cancel(causeStop) })
		stopTimer = t.Stop
	}
	start := time.Now()
	s.wg.Go(func() { s.launch(ctx) })
	if len(s.opts.KillAllAt) > 0 || s.opts.KillAllEvery > 0 {
		s.wg.Go(func() { s.killAllSchedule(ctx, start) })
	}
	go func() { // owner of cleanup: ends right after the last swarm goroutine
		s.wg.Wait()
		stopTimer()
		cancel(causeStop)
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
		if s.transport != nil {
			s.transport.CloseIdleConnections()
		}
		close(s.done)
	}()
	return nil
}

// Run starts the swarm and returns once it has stopped (ctx ended, Duration
// elapsed or Stop) and every goroutine it started has ended.
func (s *Swarm) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-s.done
	return nil
}

// Stop asks every agent to stop; in-flight requests end as cancelled with
// reason stop. It does not wait (see Wait).
func (s *Swarm) Stop() {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(causeStop)
	}
}

// Wait blocks until every goroutine of the swarm has ended and its own
// transport is closed, or until ctx ends (then it returns ctx's error and
// the swarm is still stopping).
func (s *Swarm) Wait(ctx context.Context) error {
	s.mu.Lock()
	started := s.cancel != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for agent swarm: %w", context.Cause(ctx))
	}
}

// KillAll kills every live agent at once, dropping all their in-flight
// requests (the mass ABORT cascade); each agent restarts after its drawn
// delay. It returns how many agents were killed. ctx is accepted for the
// fault interface; the call never blocks.
func (s *Swarm) KillAll(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("kill all agents: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return 0, fmt.Errorf("kill all agents: %w", ErrNotRunning)
	}
	n := 0
	for _, kill := range s.kills {
		if kill != nil {
			kill(causeKillAll)
			n++
		}
	}
	s.counters.killAlls.Add(1)
	return n, nil
}

func (s *Swarm) setKill(id int, kill context.CancelCauseFunc) {
	s.mu.Lock()
	s.kills[id] = kill
	s.mu.Unlock()
}

// launch starts the agents spread over StartSpread, then closes Ready after
// WarmUp. Agent goroutines join the swarm's WaitGroup.
func (s *Swarm) launch(ctx context.Context) {
	n := s.opts.Agents
	for id := range n {
		if id > 0 && !sleepCtx(ctx, s.opts.StartSpread/time.Duration(n)) {
			return
		}
		s.wg.Go(func() { s.runAgent(ctx, id) })
	}
	if sleepCtx(ctx, s.opts.WarmUp) {
		close(s.ready)
	}
}

// killAllSchedule fires the preset's kill-alls at their seeded offsets from
// start, until ctx ends.
func (s *Swarm) killAllSchedule(ctx context.Context, start time.Time) {
	sched := newKillAllSchedule(s.cfg.Seed, s.opts)
	for {
		at, ok := sched.next()
		if !ok || !sleepCtx(ctx, time.Until(start.Add(at))) {
			return
		}
		_, _ = s.KillAll(ctx) // only fails once the swarm is stopping
	}
}

// killAllScheduleGen yields KillAllAt, then exponential KillAllEvery draws.
type killAllScheduleGen struct {
	at    []time.Duration
	every time.Duration
	rng   *rand.Rand
	last  time.Duration
}

func newKillAllSchedule(seed uint64, o Options) *killAllScheduleGen {
	return &killAllScheduleGen{at: o.KillAllAt, every: o.KillAllEvery,
		rng: rand.New(rand.NewPCG(mix64(seed^0x4b11a11), 0x4b11a11))}
}

func (g *killAllScheduleGen) next() (time.Duration, bool) {
	if len(g.at) > 0 {
		at := g.at[0]
		g.at = g.at[1:]
		g.last = max(g.last, at)
		return at, true
	}
	if g.every <= 0 {
		return 0, false
	}
	g.last += expDuration(g.rng, g.every)
	return g.last, true
}
