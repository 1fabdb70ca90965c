package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/gate"
	"github.com/pdchaos/pdchaos/zmtp"
)

// Prefill is a running prefill role: HTTP server, bootstrap server, one
// control PULL socket, bootstrap loop and transfer workers per rank, and the
// scheduler loop, all driving a core.Prefill under one mutex.
type Prefill struct {
	cfg    contract.EngineConfig
	log    *slog.Logger
	links  *linkTable
	clock  steadyClock // what the role records and decides by (the core never reads a clock)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	core    *core.Prefill
	hist    *core.History
	waiters map[string]chan error

	wake       chan struct{}
	workerWake [][]chan struct{}
	notify     *pushPool

	httpSrv, bootSrv *http.Server
	httpLn, bootLn   net.Listener
	pulls            []*zmtp.Pull

	schedGate  gate.Gate
	bootGates  []*gate.Gate
	workGates  [][]*gate.Gate
	writeGates [][]*gate.Gate

	requests atomic.Int64
	ridSeq   atomic.Uint64
	// kvEpoch moves on when the core sees a decode restart (restartsSeen,
	// under mu, is the count it last saw): the workers' KV connections
	// from before reach a dead process, so they redial instead of
	// failing a write of a room decode's successor holds.
	kvEpoch      atomic.Uint64
	restartsSeen int64
	regressed    bool // some regression is on
	probes       *core.ProbeCounts
	gauges       *gaugeLog // what /metrics exports (set up with the routes)
}

// PrefillAddrs are the addresses a prefill role listens on; empty means
// an OS-chosen port on Config.Host.
type PrefillAddrs struct {
	HTTP      string   `json:"http"`
	Bootstrap string   `json:"bootstrap"`
	Control   []string `json:"control"`
}

// StartPrefill starts a prefill role.
func StartPrefill(ctx context.Context, cfg contract.EngineConfig, addrs PrefillAddrs, log *slog.Logger) (*Prefill, error) {
	return StartPrefillWith(ctx, cfg, addrs, RoleOptions{Log: log})
}

// StartPrefillWith is StartPrefill with options.
func StartPrefillWith(ctx context.Context, cfg contract.EngineConfig, addrs PrefillAddrs, o RoleOptions) (*Prefill, error) {
	return startPrefill(ctx, cfg, addrs, newLinkTable(), newSteadyClock(o.ClockStep), o.Log)
}

func startPrefill(ctx context.Context, cfg contract.EngineConfig, addrs PrefillAddrs, links *linkTable, clock steadyClock, log *slog.Logger) (*Prefill, error) {
	cfg, reg, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hist := core.NewHistory(2000)
	probes := &core.ProbeCounts{}
	p := &Prefill{cfg: cfg, log: log.With("role", "prefill"), links: links, clock: clock, hist: hist, probes: probes,
		core: core.NewPrefill(core.PrefillConfig{Ranks: cfg.TP, Workers: cfg.TransferWorkers, PageSize: cfg.PageSize,
			ChunkPages: cfg.ChunkPages, PostedWrites: cfg.KVPostedWrites, BootstrapTimeout: cfg.BootstrapTimeout, InflightTimeout: cfg.InflightTimeout, Regressions: reg, Wire: cfg.Wire,
			Probes: probes}, hist),
		waiters: map[string]chan error{}, wake: make(chan struct{}, 1), regressed: len(reg.List()) > 0}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.notify = newPushPool(p.ctx, links, nil, probes, contract.SidePrefill, cfg.PushQueueLen)
	ok := false
	defer func() {
		if !ok {
			_ = p.Close(context.Background())
		}
	}()
	if p.httpLn, err = listen(ctx, cfg.Host, addrs.HTTP); err != nil {
		return nil, fmt.Errorf("start prefill http: %w", err)
	}
	if p.bootLn, err = listen(ctx, cfg.Host, addrs.Bootstrap); err != nil {
		return nil, fmt.Errorf("start prefill bootstrap server: %w", err)
	}
	for r := range cfg.TP {
		addr := net.JoinHostPort(cfg.Host, "0")
		if r < len(addrs.Control) && addrs.Control[r] != "" {
			addr = addrs.Control[r]
		}
		pull, err := zmtp.Listen(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("start prefill control socket rank %d: %w", r, err)
		}
		p.pulls = append(p.pulls, pull)
		p.bootGates = append(p.bootGates, &gate.Gate{})
		var gates, writes []*gate.Gate
		var wakes []chan struct{}
		for range cfg.TransferWorkers {
			gates = append(gates, &gate.Gate{})
			writes = append(writes, &gate.Gate{})
			wakes = append(wakes, make(chan struct{}, 1))
		}
		p.workGates = append(p.workGates, gates)
		p.writeGates = append(p.writeGates, writes)
		p.workerWake = append(p.workerWake, wakes)
	}
	p.httpSrv = &http.Server{Handler: p.routes(), ReadHeaderTimeout: 10 * time.Second}
	p.bootSrv = &http.Server{Handler: p.bootstrapRoutes(), ReadHeaderTimeout: 10 * time.Second}
	p.goServe(p.httpSrv, p.httpLn)
	p.goServe(p.bootSrv, p.bootLn)
	p.wg.Add(1)
	go p.schedulerLoop()
	for r := range cfg.TP {
		p.wg.Add(1)
		go p.bootstrapLoop(r)
		for w := range cfg.TransferWorkers {
			p.wg.Add(1)
			go p.workerLoop(r, w)
		}
	}
	ok = true
	return p, nil
}

func listen(ctx context.Context, host, addr string) (net.Listener, error) {
	if addr == "" {
		addr = net.JoinHostPort(host, "0")
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}

func (p *Prefill) goServe(srv *http.Server, ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// Addrs reports where the role listens.
func (p *Prefill) Addrs() PrefillAddrs {
	a := PrefillAddrs{HTTP: p.httpLn.Addr().String(), Bootstrap: p.bootLn.Addr().String()}
	for _, pull := range p.pulls {
		a.Control = append(a.Control, pull.Addr())
	}
	return a
}

// Close stops every loop and listener and waits for all goroutines.
func (p *Prefill) Close(ctx context.Context) error {
	p.cancel()
	var errs []error
	for _, s := range []*http.Server{p.httpSrv, p.bootSrv} {
		if s != nil {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			if err := s.Shutdown(sctx); err != nil {
				_ = s.Close()
			}
			cancel()
		}
	}
	for _, l := range []net.Listener{p.httpLn, p.bootLn} {
		if l != nil {
			_ = l.Close()
		}
	}
	for _, pull := range p.pulls {
		errs = append(errs, pull.Close())
	}
	for _, g := range p.allGates() {
		g.Open()
	}
	p.wg.Wait()
	p.notify.wait()
	return errors.Join(errs...)
}

func (p *Prefill) kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (p *Prefill) schedulerLoop() {
	defer p.wg.Done()
	tick := time.NewTicker(p.cfg.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
		case <-tick.C:
		}
		if p.schedGate.Wait(p.ctx) != nil {
			return
		}
		p.mu.Lock()
		fin := p.core.PopBootstrapped(p.clock.Now())
		tokens := p.core.WaitingTokens()
		p.mu.Unlock()
		p.finish(fin)
		if tokens > 0 && p.cfg.PrefillTokensPerSec > 0 {
			// The forward pass: requests that reach waiting meanwhile wait
			// for the next one, as in a real batch.
			d := time.Duration(float64(tokens) / p.cfg.PrefillTokensPerSec * float64(time.Second))
			select {
			case <-time.After(d):
			case <-p.ctx.Done():
				return
			}
		}
		p.mu.Lock()
		fin, forwarded := p.core.Forward(p.clock.Now())
		fin = append(fin, p.core.ProcessInflight(p.clock.Now())...)
		_, more, _ := p.core.QueueLens()
		p.mu.Unlock()
		if more > 0 {
			p.kick(p.wake) // the next batch, after this pass's deadline checks
		}
		p.finish(fin)
		// SGLang's log points, where logged gauges are set.
		if forwarded > 0 {
			p.gauges.prefillBatch(p.clock.Now())
		} else {
			p.gauges.idleTick(p.clock.Now())
		}
		if forwarded > 0 {
			for r := range p.workerWake {
				for w := range p.workerWake[r] {
					p.kick(p.workerWake[r][w])
				}
			}
		}
	}
}

// finish hands results to waiting handlers and sends queued notices.
func (p *Prefill) finish(fin []core.Finish) {
	p.mu.Lock()
	out := p.core.TakeOutbound()
	for _, f := range fin {
		if ch, ok := p.waiters[f.Rid]; ok {
			ch <- f.Err
			delete(p.waiters, f.Rid)
		}
	}
	p.mu.Unlock()
	p.sendOut(out)
}

func (p *Prefill) sendOut(out []core.Outbound) {
	for _, o := range out {
		p.notify.send(o.To, o.Frames)
	}
}

func (p *Prefill) bootstrapLoop(rank int) {
	defer p.wg.Done()
	for {
		m, err := p.pulls[rank].RecvMessage(p.ctx)
		if err != nil {
			return
		}
		if p.bootGates[rank].Wait(p.ctx) != nil {
			return
		}
		p.mu.Lock()
		err = p.core.OnControlFrom(p.clock.Now(), rank, m.Frames, m.Conn)
		out := p.core.TakeOutbound()
		if p.core.DecodeRestarts != p.restartsSeen {
			p.restartsSeen = p.core.DecodeRestarts
			p.kvEpoch.Add(1)
		}
		p.mu.Unlock()
		p.sendOut(out)
		p.kick(p.wake)
		if errors.Is(err, core.ErrLoopDead) {
			// The thread is gone; the process and /health carry on.
			p.log.Debug("bootstrap loop exited", "rank", rank, "err", err)
			return
		}
	}
}

var errInactive = errors.New("decode reports the room inactive")

type kvConn struct {
	conn  net.Conn
	r     *bufio.Reader
	w     *bufio.Writer
	gen   uint64 // the link table's generation it was dialled in
	epoch uint64 // the kvEpoch it was dialled in
}

func (p *Prefill) workerLoop(rank, w int) {
	defer p.wg.Done()
	conns := map[string]*kvConn{}
	defer func() {
		for _, c := range conns {
			_ = c.conn.Close()
		}
	}()
	tick := time.NewTicker(p.cfg.CheckInterval * 4)
	defer tick.Stop()
	for {
		p.mu.Lock()
		var batch []*core.Chunk
		if p.cfg.KVPostedWrites > 1 {
			batch = p.core.WorkerBeginPosted(p.clock.Now(), rank, w)
		} else if c := p.core.WorkerBegin(p.clock.Now(), rank, w); c != nil {
			batch = []*core.Chunk{c}
		}
		p.mu.Unlock()
		if batch == nil {
			select {
			case <-p.ctx.Done():
				return
			case <-p.workerWake[rank][w]:
			case <-tick.C:
			}
			continue
		}
		if p.workGates[rank][w].Wait(p.ctx) != nil {
			return
		}
		p.mu.Lock()
		before := p.core.StatusChanges()
		send := p.core.WorkerSend(p.clock.Now(), rank, w)
		moved := p.core.StatusChanges() != before
		p.mu.Unlock()
		var err error
		if send {
			if p.writeGates[rank][w].Wait(p.ctx) != nil {
				return
			}
			// The write is posted: its bytes land half-way through its
			// time on the wire whatever happens to the room meanwhile,
			// and its completion comes back at the end.
			if !p.onWire(p.cfg.KVWriteLatency / 2) {
				return
			}
			err = p.sendChunks(conns, batch)
			if !p.onWire(p.cfg.KVWriteLatency - p.cfg.KVWriteLatency/2) {
				return
			}
		}
		p.mu.Lock()
		before = p.core.StatusChanges()
		p.core.WorkerEnd(p.clock.Now(), rank, w, err)
		moved = moved || p.core.StatusChanges() != before
		settled := p.core.Settled(rank, batch[0].Room)
		out := p.core.TakeOutbound()
		p.mu.Unlock()
		p.sendOut(out)
		// The scheduler acts on a room's status once it is terminal (and
		// on its own deadlines, on its tick): a chunk that left its room
		// Transferring, every one but the last, has nothing for it. With
		// a regression on, whose races this engine reproduces, it is woken
		// after every chunk as it always was.
		if !send || (moved && settled) || p.regressed {
			p.kick(p.wake)
		}
	}
}

// onWire waits d of a posted write's time on the wire (EngineConfig.
// KVWriteLatency); false when the role is closing.
func (p *Prefill) onWire(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// sendChunks writes a batch of one room's chunks, each on its own
// connection (rail), all posted at once when there are several, and
// returns once every completion is back: the first failure, or nil. The
// aux message, the room's completion notice, goes after the batch that
// holds the last chunk, so decode only hears of completion once every
// write landed, in whatever order they did.
func (p *Prefill) sendChunks(conns map[string]*kvConn, batch []*core.Chunk) error {
	kcs := make([]*kvConn, len(batch))
	for i, c := range batch {
		kc, err := p.kvConn(conns, railKey(c.KVAddr, i))
		if err != nil {
			p.probes.Hit(contract.ProbePrefillKVDialFailed)
			return err
		}
		kcs[i] = kc
	}
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		errs[0] = p.postKV(kcs[0], chunkMsg(batch[0]))
	} else {
		var wg sync.WaitGroup
		for i, c := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.postKV(kcs[i], chunkMsg(c))
			}()
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil && !errors.Is(err, errInactive) {
			p.dropKV(conns, railKey(batch[i].KVAddr, i))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if last := batch[len(batch)-1]; last.Last {
		err := p.postKV(kcs[0], kvMsg{agent: last.Agent, kind: kvAux, room: last.Room, rank: uint16(last.Rank)})
		if err != nil && !errors.Is(err, errInactive) {
			p.dropKV(conns, railKey(last.KVAddr, 0))
		}
		return err
	}
	return nil
}

func chunkMsg(c *core.Chunk) kvMsg {
	return kvMsg{agent: c.Agent, kind: kvChunk, room: c.Room, id: uint32(c.ID), last: c.Last, rank: uint16(c.Rank), first: uint32(c.First), pages: c.Pages, payload: c.Payload}
}

// railKey names the connection a worker uses for its i-th posted write to
// addr; rail 0 is the address itself.
func railKey(addr string, i int) string {
	if i == 0 {
		return addr
	}
	return addr + "#" + strconv.Itoa(i)
}

// postKV writes one KV message and waits for its completion. On a write or
// read failure the caller drops the connection.
func (p *Prefill) postKV(kc *kvConn, m kvMsg) error {
	_ = kc.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeKV(kc.w, m); err != nil {
		p.probes.Hit(contract.ProbePrefillKVWriteFailed)
		return fmt.Errorf("write kv chunk: %w", err)
	}
	reply, err := kc.r.ReadByte()
	if err != nil {
		p.probes.Hit(contract.ProbePrefillKVReadFailed)
		return fmt.Errorf("read kv reply: %w", err)
	}
	if reply == kvInactive {
		p.probes.Hit(contract.ProbePrefillChunkRefused)
		return errInactive
	}
	return nil
}

// kvConn returns the worker's connection for key (an address, or an
// address and rail from railKey), dialling it if needed.
func (p *Prefill) kvConn(conns map[string]*kvConn, key string) (*kvConn, error) {
	if kc, ok := conns[key]; ok && kc.gen == p.links.generation() && kc.epoch == p.kvEpoch.Load() {
		return kc, nil
	}
	p.dropKV(conns, key)
	addr, _, _ := strings.Cut(key, "#")
	if addr == "" {
		// A real NIXL decode registers NIXL agent metadata, not a pdchaos
		// KV listener: there is nowhere this prefill can write its KV.
		return nil, errors.New("decode registered no pdchaos KV address (its NIXL agent metadata is not kv=HOST:PORT): this prefill cannot write its KV")
	}
	target, gen := p.links.resolve(addr)
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("dial kv link %s: %w", addr, err)
	}
	kc := &kvConn{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn), gen: gen, epoch: p.kvEpoch.Load()}
	conns[key] = kc
	return kc, nil
}

func (p *Prefill) dropKV(conns map[string]*kvConn, addr string) {
	if kc, ok := conns[addr]; ok {
		_ = kc.conn.Close()
		delete(conns, addr)
	}
}

func (p *Prefill) allGates() []*gate.Gate {
	gates := []*gate.Gate{&p.schedGate}
	gates = append(gates, p.bootGates...)
	for r := range p.workGates {
		gates = append(gates, p.workGates[r]...)
		gates = append(gates, p.writeGates[r]...)
	}
	return gates
}

func (p *Prefill) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req contract.GenerateRequest
	if err := readJSON(w, r, &req); err != nil {
		badBody(w, "/generate body", err)
		return
	}
	if req.BootstrapRoom == nil {
		writeError(w, http.StatusBadRequest, "prefill /generate needs bootstrap_room (send requests through the router)")
		return
	}
	room := *req.BootstrapRoom
	rid := req.Rid
	if rid == "" {
		rid = "prefill-" + strconv.FormatUint(p.ridSeq.Add(1), 10)
	}
	tokens := model.Tokenize(req.Text)
	done := make(chan error, 1)
	p.mu.Lock()
	err := p.core.Add(p.clock.Now(), rid, room, tokens)
	if err == nil {
		p.waiters[rid] = done
	}
	p.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p.requests.Add(1)
	p.kick(p.wake)
	select {
	case err = <-done:
	case <-r.Context().Done():
		p.mu.Lock()
		p.core.OnClientGone(p.clock.Now(), room, rid)
		p.mu.Unlock()
		p.kick(p.wake)
		return
	case <-p.ctx.Done():
		writeError(w, http.StatusServiceUnavailable, "prefill shutting down")
		return
	}
	if r.Context().Err() != nil {
		p.mu.Lock()
		p.core.ClientGone(p.clock.Now(), room, rid) // the cancel came as the room ended
		p.mu.Unlock()
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("prefill room %d: %v", room, err))
		return
	}
	writeJSON(w, contract.GenerateChunk{MetaInfo: contract.MetaInfo{ID: rid, PromptTokens: len(tokens), CompletionTokens: 1,
		FinishReason: &contract.FinishReason{Type: "length", Length: 1}, BootstrapRoom: room}})
}
