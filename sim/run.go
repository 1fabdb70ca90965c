package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/harness/check"
)

// Options are per-run switches that do not change what runs.
type Options struct {
	// Trace records every actor step, message and fault in Result.Trace.
	Trace bool
	// Events keeps the event log the judge read in Result.Events.
	Events bool
}

// Result is one simulated run's verdict and what it measured.
type Result struct {
	Seed uint64
	// Checks is the judge's verdict over the run's event log.
	Checks check.Checks
	// Failed is the first failing checker, "" when none failed.
	Failed string
	// Requests counts client requests that ended (probes aside).
	Requests int
	// Steps is how many actor steps the scheduler ran.
	Steps int64
	// SimTime is the virtual time the run covered.
	SimTime time.Duration
	// Probes holds every code probe's hits by name (zero ones too).
	Probes map[string]int64
	// Trace is the interleaving, when Options.Trace.
	Trace string
	// Events is the judged log, when Options.Events.
	Events []check.Event
	// Swarm says what a swarm seed drew (Explore with Swarm).
	Swarm string
}

// run is one simulation: the world plus the engine, router and clients.
type run struct {
	*world
	seed uint64
	// senders counts the control and notice senders numbered so far
	// (connOf).
	senders uint64
	cfg     contract.EngineConfig
	reg     contract.Regressions
	clients Clients
	checks  Checks
	wire    core.Dialect

	p      *core.Prefill
	d      *core.Decode
	ph, dh *core.History
	// recorded sums, by side, the events of the histories a restart
	// replaced, so they add up with the probe counts, which last the run.
	recorded                  map[string]map[string]int64
	pprobes, dprobes, rprobes *core.ProbeCounts

	// strangers: Config.Strangers, a peer that is not the engine, is on.
	strangers bool

	windows []*window
	links   map[string]*link
	names   linkNames

	// dInc counts decode's process incarnations (sigkill); dDown: killed
	// and not yet back. Work addressed to an older incarnation is lost.
	dInc  int
	dDown bool
	// pInc and pDown are the same for prefill's process.
	pInc  int
	pDown bool
	// killGen counts sigkill windows applied per role: a restart planned
	// by one is void once another applied.
	killGen map[string]int
	// restartsSeen is prefill's DecodeRestarts when its workers last
	// redialled decode.
	restartsSeen int64

	pSched, dSched          actor
	forwarding, pendingStep bool
	boot, notify            []*inbox
	workers                 [][]*worker
	// waiting holds, per role, what waits for its stopped process to
	// continue (untilContinues).
	waiting map[string][]func()
	// ctlPush are decode's senders to each prefill rank's control
	// socket; notifyPush prefill rank p's to decode rank d's notify
	// socket at p*TP+d.
	ctlPush, notifyPush []*pusher
	routed              bool // decode has resolved prefill's route

	streams map[string]*request
	pwait   map[string]*request

	system   []model.Token
	systemKV model.Digest // the system prompt's KV digested (promptSeed)
	agents   []*agentState
	nreq     int
	loadEnd  time.Duration
	outcomes []outcome.Outcome
	ended    int
	events   []check.Event
}

// Run simulates cfg with seed and judges the run. It fails on a bad config,
// or when ctx ends first (the run is then cut short and not judged); a
// violation is in Result.Checks.
func Run(ctx context.Context, cfg Config, seed uint64, opts Options) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	s := newRun(cfg, seed, opts)
	s.done = ctx.Done()
	s.simulate(cfg)
	if s.interrupted {
		return Result{Seed: seed, Steps: s.steps, SimTime: s.now}, fmt.Errorf("simulate %s seed %d: cut short at %v of virtual time: %w", cfg.Name, seed, s.now, context.Cause(ctx))
	}
	res := Result{Seed: seed, Requests: s.ended, Steps: s.steps, SimTime: s.now}
	res.Checks = check.Judge(s.events, check.Floor{MinRequests: s.checks.MinRequests, MinCancels: s.checks.MinCancels})
	if f := res.Checks.Failed(); len(f) > 0 {
		res.Failed = f[0]
	}
	res.Probes = s.probeHits()
	if s.trace != nil {
		res.Trace = s.trace.String()
	}
	if opts.Events {
		res.Events = s.events
	}
	return res, nil
}

func newRun(cfg Config, seed uint64, opts Options) *run {
	ec, reg, _ := cfg.Engine.Resolve() // validated
	s := &run{world: newWorld(seed, cfg.Name, opts.Trace), seed: seed, cfg: ec, clients: cfg.Clients.withDefaults(), checks: cfg.Checks.withDefaults(),
		links: map[string]*link{}, streams: map[string]*request{}, pwait: map[string]*request{}, killGen: map[string]int{}, waiting: map[string][]func(){},
		ph: core.NewHistory(1 << 30), dh: core.NewHistory(1 << 30),
		pprobes: &core.ProbeCounts{}, dprobes: &core.ProbeCounts{}, rprobes: &core.ProbeCounts{}}
	s.wire, _ = core.NewDialect(ec.Wire)
	s.names = newLinkNames(ec.TP)
	for r := range ec.TP {
		s.ctlPush = append(s.ctlPush, &pusher{link: s.names.ctl[r], decode: true, rank: r})
	}
	for pr := range ec.TP {
		for dr := range ec.TP {
			s.notifyPush = append(s.notifyPush, &pusher{link: s.names.notify[pr], rank: dr})
		}
	}
	s.reg = reg
	s.p = s.newPrefill()
	s.d = s.newDecode()
	s.pSched = actor{name: "prefill/sched", step: s.prefillStep}
	s.dSched = actor{name: "decode/sched", step: s.decodeStep}
	for r := range ec.TP {
		b := &inbox{actor: actor{name: fmt.Sprintf("prefill/boot/%d", r)}}
		b.step = func() { s.bootStep(r) }
		s.boot = append(s.boot, b)
		n := &inbox{actor: actor{name: fmt.Sprintf("decode/notify/%d", r)}}
		n.step = func() { s.notifyStep(r) }
		s.notify = append(s.notify, n)
		var ws []*worker
		for w := range ec.TransferWorkers {
			wk := &worker{actor: actor{name: fmt.Sprintf("prefill/w%d.%d", r, w)}, rank: r, w: w, conn: fmt.Sprintf("%s#w%d", contract.KVLink(r), w)}
			wk.back = wk.conn + "<"
			wk.step = func() { s.workerStep(wk) }
			ws = append(ws, wk)
		}
		s.workers = append(s.workers, ws)
	}
	return s
}

// newPrefill is prefill's core, recording into s.ph: empty, as every
// incarnation of the process starts.
func (s *run) newPrefill() *core.Prefill {
	return core.NewPrefill(core.PrefillConfig{Ranks: s.cfg.TP, Workers: s.cfg.TransferWorkers, PageSize: s.cfg.PageSize, ChunkPages: s.cfg.ChunkPages,
		BootstrapTimeout: s.cfg.BootstrapTimeout, InflightTimeout: s.cfg.InflightTimeout, Regressions: s.reg, Wire: s.cfg.Wire, Probes: s.pprobes}, s.ph)
}

// newDecode is decode's core for incarnation s.dInc, recording into s.dh:
// its agent names are its process's own (a restarted decode's differ, as
// the live process's carry its incarnation), its addresses fixed.
func (s *run) newDecode() *core.Decode {
	var agents []core.DecodeAgent
	for r := range s.cfg.TP {
		kv := fmt.Sprintf("%s:%d", decodeIP, kvBase+r)
		unique := fmt.Sprintf("decode-agent-%d", r)
		if s.dInc > 0 {
			unique += fmt.Sprintf(".%d", s.dInc)
		}
		agents = append(agents, core.DecodeAgent{IP: decodeIP, NotifyPort: notifyBase + r, Name: s.wire.AgentName(unique, kv), KVAddr: kv,
			KVBase: core.DefaultKVBase(r) + uint64(s.dInc)<<12}) // each incarnation maps its buffers anew
	}
	return core.NewDecode(core.DecodeConfig{Ranks: s.cfg.TP, PageSize: s.cfg.PageSize, Pages: s.cfg.Pages, WaitingTimeout: s.cfg.WaitingTimeout,
		AckTimeout: s.cfg.AckTimeout, Agents: agents, Regressions: s.reg, Wire: s.cfg.Wire, Probes: s.dprobes}, s.dh)
}

// simulate plays the whole run: baseline, load with faults, drain,
// liveness probes, final records.
func (s *run) simulate(cfg Config) {
	s.emit(check.Event{Type: check.EvRun, Run: &check.RunInfo{Scenario: cfg.Name, Seed: s.seed, Target: check.SimTarget, BaseWall: epoch, Engine: &s.cfg}})
	s.scrape()
	s.loadEnd = cfg.Duration
	warm := s.clients.StartSpread + s.clients.WarmUp
	s.windows = s.plan(cfg.Faults, warm, max(cfg.Duration-warm, time.Millisecond))
	s.tracef("sim", "%s seed %d: %d agents for %v, tp %d, %d workers, regressions %v", cfg.Name, s.seed, s.clients.Agents, cfg.Duration,
		s.cfg.TP, s.cfg.TransferWorkers, s.cfg.Regressions)
	for _, wn := range s.windows {
		s.tracef("sim", "fault window %d: %s %v..%v", wn.id, wn.name(), wn.start, wn.end)
	}
	for _, wn := range s.windows {
		s.at(wn.start, "faults", func() { s.apply(wn) })
		s.at(wn.end, "faults", func() { s.heal(wn) })
	}
	s.tick()
	s.after(s.cfg.HeartbeatInterval, "decode/heartbeat", s.heartbeat)
	s.startClients()
	if cfg.Strangers {
		s.strangers = true
		s.startStrangers()
	}
	for t := 500 * time.Millisecond; t < cfg.Duration; t += 500 * time.Millisecond {
		s.at(t, "recorder", func() { s.scrape(); s.snapRooms(false) })
	}
	s.runUntil(cfg.Duration, nil)
	s.stopClients()
	for _, wn := range s.windows { // every fault healed before the drain
		if wn.active {
			s.heal(wn)
		}
	}
	drainStart := s.now
	settled := false
	for s.now-drainStart < s.checks.DrainDeadline {
		if settled = s.settled(); settled {
			break
		}
		s.runUntil(s.now+50*time.Millisecond, nil)
	}
	s.emit(check.Event{Type: check.EvDrain, Drain: &check.Drain{Settled: settled, Waited: s.now - drainStart}})
	s.flushOutcomes()
	s.liveness()
	s.flushOutcomes()
	s.scrape()
	s.snapRooms(true)
	s.emitFaults()
	for _, side := range []string{contract.SidePrefill, contract.SideDecode, contract.SideRouter} {
		s.emit(check.Event{Type: check.EvCodeProbes, Source: side, CodeProbes: &check.CodeProbes{Role: side, Hits: s.sideHits(side), Recorded: s.sideRecorded(side)}})
	}
	s.emit(check.Event{Type: check.EvLeaks, Leaks: &check.Leaks{Detail: "simulated run: no goroutines to leak"}})
	s.emit(check.Event{Type: check.EvEnd, End: &check.EndInfo{}})
}

func (s *run) emit(ev check.Event) {
	ev.T = s.now
	s.events = append(s.events, ev)
}

// stopClients is the swarm's stop: requests still open are cancelled with
// the stop reason, which the checkers do not count as client cancels.
func (s *run) stopClients() {
	for _, a := range s.agents {
		for _, req := range s.sorted(a.inflight) {
			s.cancel(req, outcome.ReasonStop)
		}
	}
}

// settled is the drain's condition: nothing queued, held or in flight,
// as the live drain waits for every slot gauge (contract.SlotGauges, a
// transfer worker still holding a chunk among them) and no room held.
func (s *run) settled() bool {
	b, w, i := s.p.QueueLens()
	if b+w+i > 0 {
		return false
	}
	for r := range s.p.Ranks() {
		if s.p.Tables(r).WorkersBusy > 0 {
			return false
		}
	}
	for r := range s.d.Ranks() {
		if s.d.Holding(r) > 0 {
			return false
		}
	}
	ph, _ := s.ph.Counts()
	dh, _ := s.dh.Counts()
	return ph == 0 && dh == 0
}

// liveness sends the probes one after another, each with its deadline.
func (s *run) liveness() {
	for i := range s.checks.Probes {
		req := &request{id: -1 - i, agent: -1, probe: true, tokens: s.words(16), maxNew: 8}
		s.send(req)
		deadline := s.now + s.checks.ProbeDeadline + time.Millisecond
		s.runUntil(deadline, func() bool { return req.ended })
	}
}

func (s *run) probeDone(req *request, o outcome.Outcome) {
	p := check.Probe{OK: o.Kind == outcome.KindCompleted && o.Integrity == "", Latency: s.now - req.start}
	if !p.OK {
		p.Error = fmt.Sprintf("probe room %d: %s %s%s", req.room, o.Kind, o.Message, o.Integrity)
	}
	s.emit(check.Event{Type: check.EvProbe, Probe: &p})
	if !p.OK {
		s.closeUpstream(req)
	}
}

// flushOutcomes writes the outcomes gathered so far to the log.
func (s *run) flushOutcomes() {
	s.ended += len(s.outcomes)
	for i := range s.outcomes {
		o := s.outcomes[i]
		s.events = append(s.events, check.Event{T: o.End, Type: check.EvOutcome, Outcome: &o})
	}
	s.outcomes = s.outcomes[:0]
}

func (s *run) apply(wn *window) {
	wn.active = true
	s.tracef("faults", "APPLY %s window %d", wn.name(), wn.id)
	s.interposed(wn)
	if wn.f.Kind == "sigkill" {
		// Every kill window counts, even one that finds the process
		// down already: a start-up restart planned before it must not
		// bring the process back inside it.
		s.killGen[wn.f.Role]++
	}
	if wn.f.Kind == "sigkill" && !s.down(wn.f.Role) {
		wn.affected++
		kill, restart := s.killDecode, s.restartDecode
		if wn.f.Role == contract.SidePrefill {
			kill, restart = s.killPrefill, s.restartPrefill
		}
		kill()
		if wn.f.Restart {
			// The live fault restarts the process at once and waits
			// for it to answer: a start-up time, not the window.
			gen := s.killGen[wn.f.Role]
			s.after(s.between(300*time.Millisecond, time.Second), "faults", func() {
				if s.killGen[wn.f.Role] == gen {
					restart()
				}
			})
		}
	}
	s.kickAll()
}

// killHeld reports whether a sigkill window of role other than wn is still
// open: its process stays down until that one heals.
func (s *run) killHeld(role string, wn *window) bool {
	for _, o := range s.windows {
		if o != wn && o.active && o.f.Kind == "sigkill" && o.f.Role == role {
			return true
		}
	}
	return false
}

// interposed models what putting a hop on a control link (or taking it
// away) does to the bundled engine: decode's push pool dials the new
// address, and a new connection starts with a registration.
func (s *run) interposed(wn *window) {
	if isLinkKind(wn.f.Kind) {
		s.lostOn(wn.f.Link)
	}
}

func (s *run) heal(wn *window) {
	if !wn.active {
		return
	}
	wn.active = false
	wn.healed = s.now
	s.tracef("faults", "HEAL %s window %d (%d affected)", wn.name(), wn.id, wn.affected)
	if wn.f.Kind == "sigstop" && !s.frozen(wn.f.Role) {
		s.continued(wn.f.Role)
	}
	for len(wn.held) > 0 {
		s.release(wn, wn.held[0])
	}
	switch {
	case wn.f.Kind != "sigkill" || s.killHeld(wn.f.Role, wn):
	case wn.f.Role == contract.SidePrefill:
		s.restartPrefill()
	default:
		s.restartDecode()
	}
	s.interposed(wn)
	s.kickAll()
}

func (s *run) emitFaults() {
	// A live fault's evidence counts over all its windows so far (its last
	// record carries the total); corrupt-messages' count is "corrupted".
	total := map[string]int64{}
	for _, wn := range s.windows {
		end := wn.healed
		rec := schedule.Record{Window: wn.id, Fault: wn.name(), Layer: layerOf(wn.f.Kind), PlannedStart: wn.start, PlannedEnd: wn.end,
			Applied: true, Start: wn.start, End: end}
		rec.Evidence.Fault, rec.Evidence.Effective = wn.name(), wn.affected > 0
		rec.Evidence.Counters = map[string]int64{"affected": wn.affected}
		if wn.f.Kind == "corrupt-messages" {
			total[wn.name()] += wn.affected
			rec.Evidence.Counters["corrupted"] = total[wn.name()]
		}
		s.events = append(s.events, check.Event{T: end, Type: check.EvFault, Fault: &rec})
	}
}

// scrape records both roles' gauges per rank, as the recorder reads them
// from /metrics.
func (s *run) scrape() {
	ps, ds := s.readGauges()
	if s.dDown {
		ds = check.Scrape{Err: "connect: connection refused (decode killed)"}
	}
	if s.pDown {
		ps = check.Scrape{Err: "connect: connection refused (prefill killed)"}
	}
	s.emit(check.Event{Type: check.EvScrape, Source: "sim/prefill", Scrape: &ps})
	s.emit(check.Event{Type: check.EvScrape, Source: "sim/decode", Scrape: &ds})
}

// readGauges is what each role's /metrics says now.
func (s *run) readGauges() (ps, ds check.Scrape) {
	b, wq, inflight := s.p.QueueLens()
	ps = check.Scrape{EngineType: "prefill", Gauges: map[string]float64{}, Counters: map[string]float64{}, Ranks: map[string]map[string]float64{}}
	for r := range s.p.Ranks() {
		alive := 1.0
		if s.p.Dead(r) {
			alive = 0
		}
		put(&ps, r, map[string]float64{contract.MetricPrefillBootstrapQueue: float64(b), contract.MetricPrefillInflightQueue: float64(inflight),
			contract.MetricQueue: float64(wq), contract.MetricRunning: 0, contract.MetricBootstrapLoopAlive: alive})
		put(&ps, r, s.p.Tables(r).Gauges(r))
	}
	ps.Counters[contract.MetricBootstrapFailed] = float64(s.p.BootstrapFailed)
	ps.Counters[contract.MetricTransferFailed] = float64(s.p.TransferFailed)
	ps.Counters[contract.MetricMalformedControl] = float64(s.p.Malformed)
	ds = check.Scrape{EngineType: "decode", Gauges: map[string]float64{}, Counters: map[string]float64{}, Ranks: map[string]map[string]float64{}}
	hung := 0.0
	if s.d.Hung() {
		hung = 1
	}
	for r := range s.d.Ranks() {
		l := s.d.Lens(r)
		put(&ds, r, map[string]float64{contract.MetricDecodePreallocQueue: float64(l.Prealloc), contract.MetricDecodeTransferQueue: float64(l.Transfer),
			contract.MetricRunning: float64(l.Running), contract.MetricQueue: 0, contract.MetricTokenUsage: float64(l.PagesUsed) / float64(l.PagesTotal),
			contract.MetricAwaitingAck: float64(l.AwaitingAck), contract.MetricSchedulerHung: hung,
			contract.MetricPagesUsed: float64(l.Pages.Used), contract.MetricPagesFree: float64(l.Pages.Free),
			contract.MetricPagesTotal: float64(l.Pages.Total), contract.MetricPagesOwnedTwice: float64(l.Pages.OwnedTwice)})
		put(&ds, r, s.d.Tables(r).Gauges(r))
	}
	ds.Counters[contract.MetricTransferFailed] = float64(s.d.TransferFailed)
	ds.Counters[contract.MetricMalformedControl] = float64(s.d.Malformed)
	ds.Counters[contract.MetricForeignWrites] = float64(s.d.ForeignWrites)
	ds.Counters[contract.MetricStrayChunks] = float64(s.d.StrayChunks)
	return ps, ds
}

func put(sc *check.Scrape, rank int, g map[string]float64) {
	key := check.RankKey(map[string]string{contract.LabelTPRank: fmt.Sprint(rank)})
	for n, v := range g {
		sc.Gauges[n] += v
		if sc.Ranks[n] == nil {
			sc.Ranks[n] = map[string]float64{}
		}
		sc.Ranks[n][key] = v
	}
}

// snapRooms records each role's rooms as /debug/rooms shows them; the
// final snapshot carries every ended room with its history.
func (s *run) snapRooms(final bool) {
	ps, ds := s.readGauges()
	for _, side := range []struct {
		role  string
		h     *core.History
		gauge check.Scrape
		ranks int
		down  bool
	}{{"prefill", s.ph, ps, s.p.Ranks(), s.pDown}, {"decode", s.dh, ds, s.d.Ranks(), s.dDown}} {
		var snap check.RoomsSnap
		if final {
			held, cleared := side.h.Snapshot()
			snap = check.RoomsSnap{Role: side.role, Held: held, Cleared: len(cleared), Final: final, Ended: cleared}
		} else {
			_, cleared := side.h.Counts() // the cleared rooms' copies are not kept
			snap = check.RoomsSnap{Role: side.role, Held: side.h.HeldWithEvents(), Cleared: cleared}
		}
		if !side.down {
			// The queue gauges read in the same instant as the held
			// rooms, as the bundled engine's /debug/rooms gives them.
			snap.SetQueues(snap.Held, perRank(side.gauge, side.ranks))
		}
		if !final {
			for i := range snap.Held {
				snap.Held[i].Events = nil // as the recorder keeps a periodic snapshot
			}
		}
		s.emit(check.Event{Type: check.EvRooms, Source: "sim/" + side.role, Rooms: &snap})
	}
}

// perRank is sc's gauges of each of ranks TP ranks, as /debug/rooms gives
// its queues.
func perRank(sc check.Scrape, ranks int) []map[string]float64 {
	out := make([]map[string]float64, ranks)
	for r := range out {
		key := check.RankKey(map[string]string{contract.LabelTPRank: fmt.Sprint(r)})
		out[r] = map[string]float64{}
		for g, series := range sc.Ranks {
			if v, ok := series[key]; ok {
				out[r][g] = v
			}
		}
	}
	return out
}

func (s *run) sideHits(side string) map[string]int64 {
	c := map[string]*core.ProbeCounts{contract.SidePrefill: s.pprobes, contract.SideDecode: s.dprobes, contract.SideRouter: s.rprobes}[side]
	out := map[string]int64{}
	for _, h := range c.Side(side) {
		out[h.Name] = h.Hits
	}
	return out
}

// retireHistory keeps the event counts of side's history before a restart
// replaces it.
func (s *run) retireHistory(side string, h *core.History) {
	if s.recorded == nil {
		s.recorded = map[string]map[string]int64{}
	}
	if s.recorded[side] == nil {
		s.recorded[side] = map[string]int64{}
	}
	for k, n := range h.Recorded() {
		s.recorded[side][k] += n
	}
}

// sideRecorded is the events side's histories wrote over the run, by
// kind; nil for the router, which keeps none.
func (s *run) sideRecorded(side string) map[string]int64 {
	h := map[string]*core.History{contract.SidePrefill: s.ph, contract.SideDecode: s.dh}[side]
	if h == nil {
		return nil
	}
	out := h.Recorded()
	for k, n := range s.recorded[side] {
		out[k] += n
	}
	return out
}

func (s *run) probeHits() map[string]int64 {
	out := map[string]int64{}
	for _, side := range []string{contract.SidePrefill, contract.SideDecode, contract.SideRouter} {
		for n, h := range s.sideHits(side) {
			out[n] = h
		}
	}
	return out
}
