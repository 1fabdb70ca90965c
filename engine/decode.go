package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/gate"
	"github.com/pdchaos/pdchaos/zmtp"
)

// Decode is a running decode role: HTTP server, one notify PULL socket and
// one KV listener per rank, and the scheduler loop, all driving a
// core.Decode under one mutex.
type Decode struct {
	cfg    contract.EngineConfig
	log    *slog.Logger
	links  *linkTable
	clock  steadyClock // what the role records and decides by (the core never reads a clock)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	core    *core.Decode
	hist    *core.History
	streams map[string]*decodeStream
	routes  map[string][]string // bootstrap addr -> control addr per rank
	// hello says whose registration starts a new connection to a control
	// address; the frames are built when it is dialled, so a redial after
	// a peer was retired registers the name of the current epoch.
	hello map[string]helloRef

	wire    core.Dialect
	wake    chan struct{}
	control *pushPool
	client  *http.Client

	httpSrv *http.Server
	httpLn  net.Listener
	kvLns   []net.Listener
	pulls   []*zmtp.Pull
	kvConns sync.Map

	schedGate gate.Gate
	regressed bool // some regression is on
	requests  atomic.Int64
	tokens    atomic.Int64
	ridSeq    atomic.Uint64
	probes    *core.ProbeCounts
	gauges    *gaugeLog // what /metrics exports (set up with the routes)
}

// helloRef names the prefill peer and rank a control address belongs to.
type helloRef struct {
	bootstrap string
	rank      int
}

type decodeStream struct {
	tokens chan core.TokenOut
	done   chan error
	// last is signalled once the Done token is queued on tokens, which
	// holds every token of the answer: a handler that answers only at
	// the end waits for it instead of waking for each token.
	last chan struct{}
}

// DecodeAddrs are the addresses a decode role listens on.
type DecodeAddrs struct {
	HTTP   string   `json:"http"`
	Notify []string `json:"notify"`
	KV     []string `json:"kv"`
}

// StartDecode starts a decode role.
func StartDecode(ctx context.Context, cfg contract.EngineConfig, addrs DecodeAddrs, log *slog.Logger) (*Decode, error) {
	return StartDecodeWith(ctx, cfg, addrs, RoleOptions{Log: log})
}

// StartDecodeWith is StartDecode with options.
func StartDecodeWith(ctx context.Context, cfg contract.EngineConfig, addrs DecodeAddrs, o RoleOptions) (*Decode, error) {
	return startDecode(ctx, cfg, addrs, newLinkTable(), newSteadyClock(o.ClockStep), o.Log)
}

func startDecode(ctx context.Context, cfg contract.EngineConfig, addrs DecodeAddrs, links *linkTable, clock steadyClock, log *slog.Logger) (*Decode, error) {
	cfg, reg, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Decode{cfg: cfg, log: log.With("role", "decode"), links: links, clock: clock, hist: core.NewHistory(2000),
		streams: map[string]*decodeStream{}, routes: map[string][]string{}, hello: map[string]helloRef{},
		wake: make(chan struct{}, 1), probes: &core.ProbeCounts{}, regressed: len(reg.List()) > 0}
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.control = newPushPool(d.ctx, links, d.helloFor, d.probes, contract.SideDecode, cfg.PushQueueLen)
	tr := &http.Transport{DialContext: links.dial, MaxIdleConnsPerHost: 4}
	d.client = &http.Client{Transport: tr, Timeout: contract.RouteLookupTimeout}
	links.watch(tr.CloseIdleConnections)
	ok := false
	defer func() {
		if !ok {
			_ = d.Close(context.Background())
		}
	}()
	if d.httpLn, err = listen(ctx, cfg.Host, addrs.HTTP); err != nil {
		return nil, fmt.Errorf("start decode http: %w", err)
	}
	var agents []core.DecodeAgent
	wire, err := core.NewDialect(cfg.Wire)
	if err != nil {
		return nil, fmt.Errorf("start decode: %w", err)
	}
	// On NIXL the agent name changes with every process, like a NIXL
	// agent's memory registration: a restarted decode refuses writes meant
	// for its predecessor's pages instead of letting them land in its own.
	// Mooncake names the KV endpoint instead (session_id "ip:port").
	incarnation := time.Now().UnixNano()
	for r := range cfg.TP {
		pick := func(l []string) string {
			if r < len(l) {
				return l[r]
			}
			return ""
		}
		pull, err := zmtp.Listen(ctx, orAny(cfg.Host, pick(addrs.Notify)))
		if err != nil {
			return nil, fmt.Errorf("start decode notify socket rank %d: %w", r, err)
		}
		d.pulls = append(d.pulls, pull)
		ln, err := listen(ctx, cfg.Host, pick(addrs.KV))
		if err != nil {
			return nil, fmt.Errorf("start decode kv listener rank %d: %w", r, err)
		}
		d.kvLns = append(d.kvLns, ln)
		host, port, _ := net.SplitHostPort(pull.Addr())
		pn, _ := strconv.Atoi(port)
		unique := fmt.Sprintf("decode-%s-%d-%x", port, r, incarnation)
		// Each process maps its KV buffers anew: their address, which
		// Mooncake's registration carries, tells this incarnation's
		// memory from a predecessor's under the same session_id.
		base := core.DefaultKVBase(r) + (uint64(incarnation)&0xfffff)<<12
		agents = append(agents, core.DecodeAgent{IP: host, NotifyPort: pn, Name: wire.AgentName(unique, ln.Addr().String()), KVAddr: ln.Addr().String(), KVBase: base})
	}
	d.core = core.NewDecode(core.DecodeConfig{Ranks: cfg.TP, PageSize: cfg.PageSize, Pages: cfg.Pages,
		WaitingTimeout: cfg.WaitingTimeout, AckTimeout: cfg.AckTimeout, Agents: agents, Regressions: reg, Wire: cfg.Wire, Probes: d.probes}, d.hist)
	d.wire = wire
	d.httpSrv = &http.Server{Handler: d.routesHandler(), ReadHeaderTimeout: 10 * time.Second}
	d.wg.Add(2)
	go func() { defer d.wg.Done(); _ = d.httpSrv.Serve(d.httpLn) }()
	go d.schedulerLoop()
	d.wg.Add(1)
	go d.heartbeatLoop()
	for r := range cfg.TP {
		d.wg.Add(2)
		go d.notifyLoop(r)
		go d.acceptKV(r)
	}
	ok = true
	return d, nil
}

func orAny(host, addr string) string {
	if addr == "" {
		return net.JoinHostPort(host, "0")
	}
	return addr
}

// KVTargets is, per rank, what prefill's KV writes must be addressed to
// for this process to take them (core.Dialect.KVTarget of the rank's
// registration): on NIXL its agent name, on Mooncake its session_id and
// the address of the KV buffers this process mapped. A peer that writes
// under anything else is refused before a byte lands.
func (d *Decode) KVTargets() []string {
	var out []string
	for _, a := range d.core.Config().Agents {
		out = append(out, d.wire.KVTarget(a.Name, a.KVBase))
	}
	return out
}

// Addrs reports where the role listens.
func (d *Decode) Addrs() DecodeAddrs {
	a := DecodeAddrs{HTTP: d.httpLn.Addr().String()}
	for r := range d.pulls {
		a.Notify = append(a.Notify, d.pulls[r].Addr())
		a.KV = append(a.KV, d.kvLns[r].Addr().String())
	}
	return a
}

// Close stops every loop and listener and waits for all goroutines.
func (d *Decode) Close(ctx context.Context) error {
	d.cancel()
	if d.httpSrv != nil {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := d.httpSrv.Shutdown(sctx); err != nil {
			_ = d.httpSrv.Close()
		}
		cancel()
	}
	if d.httpLn != nil {
		_ = d.httpLn.Close()
	}
	var errs []error
	for _, ln := range d.kvLns {
		_ = ln.Close()
	}
	d.kvConns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
	for _, pull := range d.pulls {
		errs = append(errs, pull.Close())
	}
	d.schedGate.Open()
	d.wg.Wait()
	d.control.wait()
	if d.client != nil {
		d.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

func (d *Decode) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Decode) helloFor(addr string) [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.hello[addr]
	if !ok {
		return nil
	}
	return d.core.Registration(h.rank, h.bootstrap)
}

func (d *Decode) schedulerLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.CheckInterval)
	defer tick.Stop()
	busy := false
	for {
		if !busy {
			select {
			case <-d.ctx.Done():
				return
			case <-d.wake:
			case <-tick.C:
			}
		} else if d.ctx.Err() != nil {
			return
		}
		if d.schedGate.Wait(d.ctx) != nil {
			return
		}
		d.mu.Lock()
		res, err := d.core.Step(d.clock.Now())
		out := d.core.TakeOutbound()
		for _, t := range res.Tokens {
			if s, ok := d.streams[t.Rid]; ok {
				s.tokens <- t
				if t.Done {
					s.last <- struct{}{}
					delete(d.streams, t.Rid)
				}
			}
		}
		for _, f := range res.Finished {
			if s, ok := d.streams[f.Rid]; ok {
				s.done <- f.Err
				delete(d.streams, f.Rid)
			}
		}
		d.mu.Unlock()
		if errors.Is(err, core.ErrCollectiveHang) {
			// A rank waits in an all-reduce its peers never join: the
			// scheduler is stuck for good, as gloo would be.
			d.log.Debug("decode scheduler hung in all-reduce")
			<-d.ctx.Done()
			return
		}
		d.tokens.Add(int64(len(res.Tokens)))
		// SGLang's log points, where logged gauges are set.
		if len(res.Tokens) > 0 {
			d.gauges.decodeBatch(d.clock.Now())
		} else {
			d.gauges.idleTick(d.clock.Now())
		}
		d.sendOut(out)
		busy = len(res.Tokens) > 0
		if busy && d.cfg.DecodeTokensPerSec > 0 {
			select {
			case <-time.After(time.Duration(float64(time.Second) / d.cfg.DecodeTokensPerSec)):
			case <-d.ctx.Done():
				return
			}
		}
	}
}

func (d *Decode) sendOut(out []core.DecodeOut) {
	for _, o := range out {
		d.mu.Lock()
		addrs := d.routes[o.Bootstrap]
		d.mu.Unlock()
		if o.Rank >= len(addrs) {
			// The route was forgotten when its prefill was lost.
			d.probes.Hit(contract.ProbeDecodeControlNoRoute)
			continue
		}
		d.control.send(addrs[o.Rank], o.Frames)
	}
}

func (d *Decode) notifyLoop(rank int) {
	defer d.wg.Done()
	for {
		frames, err := d.pulls[rank].Recv(d.ctx)
		if err != nil {
			return
		}
		d.mu.Lock()
		_ = d.core.OnNotice(d.clock.Now(), rank, frames)
		d.mu.Unlock()
		d.kick()
	}
}

func (d *Decode) acceptKV(rank int) {
	defer d.wg.Done()
	for {
		conn, err := d.kvLns[rank].Accept()
		if err != nil {
			return
		}
		d.kvConns.Store(conn, struct{}{})
		d.wg.Add(1)
		go d.serveKV(rank, conn)
	}
}

// serveKV applies chunks from one prefill worker connection, replying to
// each as its write completion.
func (d *Decode) serveKV(rank int, conn net.Conn) {
	defer d.wg.Done()
	defer d.kvConns.Delete(conn)
	defer conn.Close()
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	var scratch kvScratch // what the core copies into its pages, read into one buffer
	for {
		m, err := readKVInto(r, &scratch)
		if err != nil {
			// A clean close between messages, or our own Close, is not
			// the peer's fault; a broken or cut message is.
			if errors.Is(err, errKVMalformed) || errors.Is(err, io.ErrUnexpectedEOF) {
				d.mu.Lock()
				d.core.OnKVUnreadable(d.clock.Now(), rank, m.room, err.Error())
				d.mu.Unlock()
			}
			return
		}
		d.mu.Lock()
		if !d.core.AdmitKVRank(d.clock.Now(), rank, int(m.rank), m.room) {
			d.mu.Unlock()
			return
		}
		var active bool
		before := d.core.StatusChanges()
		// The name is checked before anything is written, as NIXL refuses
		// a write to a remote agent it dropped.
		if !d.core.AdmitKV(d.clock.Now(), rank, m.room, int(m.id), m.agent) {
			active = false
		} else if m.kind == kvChunk {
			active = d.core.OnChunk(d.clock.Now(), rank, m.room, int(m.id), m.last, m.pages, int(m.first), m.payload)
		} else {
			active = d.core.OnAux(d.clock.Now(), rank, m.room)
		}
		moved := d.core.StatusChanges() != before
		d.mu.Unlock()
		// The scheduler acts on statuses: a message that moved none (every
		// chunk but the one completing a room) has nothing for it. With a
		// regression on it is woken after every message, as it always was.
		if moved || !active || d.regressed {
			d.kick()
		}
		reply := byte(kvAccepted)
		if !active {
			reply = kvInactive
		}
		if w.WriteByte(reply) != nil || w.Flush() != nil {
			d.mu.Lock()
			d.core.OnKVReplyFailed(d.clock.Now(), rank, m.room)
			d.mu.Unlock()
			return
		}
	}
}

// resolve finds prefill's control socket per rank through its bootstrap
// server's /route, once per bootstrap address, and prepares the
// registration each new connection starts with.
func (d *Decode) resolve(ctx context.Context, bootstrap string) error {
	d.mu.Lock()
	_, ok := d.routes[bootstrap]
	d.mu.Unlock()
	if ok {
		return nil
	}
	var addrs []string
	for r := range d.cfg.TP {
		u := "http://" + bootstrap + contract.PathRoute + "?" + contract.RouteDialects()[0].Query(contract.RouteRank{TP: r})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("bootstrap route %s: %w", bootstrap, err)
		}
		resp, err := d.client.Do(req)
		if err != nil {
			return fmt.Errorf("bootstrap route %s rank %d: %w", bootstrap, r, err)
		}
		var route struct {
			RankIP   string `json:"rank_ip"`
			RankPort int    `json:"rank_port"`
		}
		err = json.NewDecoder(resp.Body).Decode(&route)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || route.RankPort == 0 {
			return fmt.Errorf("bootstrap route %s rank %d: status %d: %v", bootstrap, r, resp.StatusCode, err)
		}
		addrs = append(addrs, net.JoinHostPort(route.RankIP, strconv.Itoa(route.RankPort)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for r, a := range addrs {
		d.hello[a] = helloRef{bootstrap: bootstrap, rank: r}
	}
	d.routes[bootstrap] = addrs
	return nil
}

// heartbeatLoop checks every prefill decode has talked to, as SGLang's
// heartbeat thread does: after core.HeartbeatFailures misses in a row, the
// rooms paired with that prefill fail at once, decode's name towards it is
// retired (its late writes are refused), its route is forgotten and its
// control connections closed, so the next request resolves it afresh and
// registers the new name even with a prefill that was only stopped.
func (d *Decode) heartbeatLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
		d.mu.Lock()
		var peers []string
		for b := range d.routes {
			peers = append(peers, b)
		}
		d.mu.Unlock()
		for _, b := range peers {
			ctx, cancel := context.WithTimeout(d.ctx, d.cfg.HeartbeatInterval)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b+contract.PathHealth, nil)
			resp, err := d.client.Do(req)
			cancel()
			ok := false
			if err == nil {
				resp.Body.Close()
				ok = resp.StatusCode == http.StatusOK
			}
			if !ok && d.ctx.Err() != nil {
				return
			}
			d.mu.Lock()
			lost, n := d.core.OnHeartbeat(d.clock.Now(), b, ok)
			if !lost {
				d.mu.Unlock()
				continue
			}
			// Forget the route: a restarted prefill is resolved afresh.
			addrs := d.routes[b]
			delete(d.routes, b)
			d.mu.Unlock()
			for _, a := range addrs {
				d.control.reset(a)
			}
			d.log.Warn("lost connection with prefill", "bootstrap", b, "rooms_failed", n, "epoch", d.epoch(b))
			d.kick()
		}
	}
}

func (d *Decode) epoch(bootstrap string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.Epoch(bootstrap)
}
