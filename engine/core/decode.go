package core

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// ErrCollectiveHang is returned by Decode.Step when the ranks' poll lists
// differ in length: the MIN all-reduce would never complete, so the
// scheduler is wedged for good (rank-desync).
var ErrCollectiveHang = errors.New("rank poll lists differ: all-reduce never completes")

// Errors a decode request can finish with.
var (
	ErrAborted       = errors.New("aborted")
	ErrDecodeFailed  = errors.New("kv transfer from prefill failed")
	ErrWaitingTimout = errors.New("timed out waiting for kv transfer")
	ErrTooLong       = errors.New("prompt does not fit in the kv cache")
)

// DecodeAgent is what a decode rank tells prefill about itself.
type DecodeAgent struct {
	IP         string
	NotifyPort int
	// Name is unique to the rank's process (NIXL) or its KV address
	// (Mooncake); the names decode hands out per prefill peer and epoch
	// are derived from it (Decode.AgentName).
	Name string
	// KVAddr is the rank's KV listener, which registrations announce.
	KVAddr string
	// KVBase is the address of the rank's KV buffers as Mooncake's
	// registration announces it (kv_ptrs): a real decode process maps them
	// anew each time it starts, so it differs between incarnations of a
	// rank whose session_id does not. Zero gets a fixed per-rank default
	// (DefaultKVBase); runtimes that restart decode give each incarnation
	// its own.
	KVBase uint64
}

// DefaultKVBase is rank's KV buffer address when its runtime names none.
func DefaultKVBase(rank int) uint64 { return 0x7f00_0000_0000 + uint64(rank)<<32 }

// DecodeConfig configures the decode side. Zero values get defaults.
type DecodeConfig struct {
	Ranks          int           // TP ranks; default 1
	PageSize       int           // tokens per page; default 16
	Pages          int           // pages per rank; default 8192
	WaitingTimeout time.Duration // default 10s after metadata was sent
	AckTimeout     time.Duration // default 5s: free an aborted room's pages even without prefill's ACK
	Agents         []DecodeAgent // one per rank
	Regressions    contract.Regressions
	// Wire is the control-message dialect; empty (or unknown) is NIXL.
	// Prefill must speak the same one.
	Wire contract.Wire
	// Probes receives the code probes' hits; nil: the side counts into
	// its own (Decode.Probes).
	Probes *ProbeCounts
}

func (c *DecodeConfig) defaults() {
	if c.Ranks <= 0 {
		c.Ranks = 1
	}
	if c.PageSize <= 0 {
		c.PageSize = 16
	}
	if c.Pages <= 0 {
		c.Pages = 8192
	}
	if c.WaitingTimeout <= 0 {
		c.WaitingTimeout = 10 * time.Second
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 5 * time.Second
	}
	for len(c.Agents) < c.Ranks {
		c.Agents = append(c.Agents, DecodeAgent{IP: "127.0.0.1", Name: fmt.Sprintf("decode-%d", len(c.Agents))})
	}
	c.Agents = slices.Clone(c.Agents) // the caller's slice is not ours to fill in
	for r := range c.Agents {
		if c.Agents[r].KVBase == 0 {
			c.Agents[r].KVBase = DefaultKVBase(r)
		}
	}
}

// DecodeReq is one request in decode's scheduler.
type DecodeReq struct {
	Rid       string
	Room      uint64
	Bootstrap string // prefill bootstrap address this room pairs with
	Tokens    []model.Token
	MaxNew    int
	Added     time.Time
	MetaSent  time.Time
	pages     [][]uint32 // per rank
	chunks    []map[int]bool
	lastID    []int
	aux       []bool
	// succeeded: the rank's prefill sent Success (Mooncake, where decode
	// waits for it: see dialectTable.successOnControl).
	succeeded []bool
	// received: the rank's chunks and aux are all in (noted once, as
	// contract.RoomEventKVReceived).
	received []bool
	// failNoticed: the rank's prefill reported the room Failed, which it
	// does only once that rank's writes have drained.
	failNoticed []bool
	// moved: the room's status changed since pollTransfers last looked
	// at it (set from the rank tables' logs).
	moved     bool
	flipped   bool // decode-abort-leak: receiver flipped, queues untouched
	committed bool // transfer done, decoding
	// unfenced: failed while its prefill may still write its pages, which
	// the wire cannot refuse (Mooncake): the pages wait for an ACK.
	unfenced  bool
	seed      uint64
	read      seedRead // last readSeed, reused while the pages are unwritten
	generated int
}

// DecodeOut is a control message for a prefill rank.
type DecodeOut struct {
	Bootstrap string
	Rank      int
	Frames    [][]byte
}

// TokenOut is one generated token for a running request.
type TokenOut struct {
	Rid   string
	Index int
	Piece string
	Done  bool
}

// DecodeFinish tells the runtime a request ended without completing.
type DecodeFinish struct {
	Rid  string
	Room uint64
	Err  error
}

// DecodeStepResult is what one decode scheduler iteration did.
type DecodeStepResult struct {
	Tokens   []TokenOut
	Finished []DecodeFinish
}

type awaitingAck struct {
	pages [][]uint32
	acked []bool
	since time.Time // the ABORT was (re)sent
	// bootstrap is the prefill the ABORT went to; resends counts the
	// times it was sent again for lack of an ACK (AbortResends).
	bootstrap string
	resends   int
	// onStatus: no ABORT was sent; the room failed on some prefill ranks'
	// Failed statuses and the pages of the others wait for theirs, each
	// sent once that rank's writes drained (an ACK counts too).
	onStatus bool
}

type decodeRank struct {
	status   *StatusTable
	pool     *PagePool
	prealloc []*DecodeReq
	transfer []*DecodeReq
}

// Decode is the decode side's scheduler and receiver logic for all its TP
// ranks. Pure: callers serialise calls and pass the time in.
type Decode struct {
	cfg      DecodeConfig
	ranks    []*decodeRank
	running  []*DecodeReq
	byRid    map[string]*DecodeReq
	byRoom   map[uint64]*DecodeReq
	aborts   []string
	awaiting map[uint64]*awaitingAck
	// released remembers when each room was last released, for one
	// waiting timeout (releasedQ, in release order, ages them out): a
	// notice or write prefill sent for the room's old request may still
	// be on its way, and it must not land on a new request for the room.
	released  map[uint64]time.Time
	releasedQ []releasedRoom
	hist      *History
	out       []DecodeOut
	hung      bool
	wire      Dialect
	probes    *ProbeCounts
	kv        kvDigests // readSeed's streams, resumed where they agree
	// epochs is the epoch of decode's name towards each prefill
	// (bootstrap address); names holds every name handed out, to tell a
	// retired one from one decode never gave (decode_peers.go).
	epochs map[string]int
	names  map[string]agentName
	// beats counts each prefill peer's missed heartbeats (OnHeartbeat).
	beats Heartbeat
	// quiet says whether pollTransfers may look only at the rooms whose
	// status moved (no regression is on: each changes what the scan does;
	// the rank tables log the rooms they change then); due is the earliest
	// MetaSent of the rooms the last full scan left in transfer, and
	// joined whether rooms entered transfer since.
	quiet  bool
	due    time.Time
	joined bool
	// scan is the copy of a queue preallocate or pollTransfers walks
	// while they take requests off it, kept between steps.
	scan []*DecodeReq
	// backstop is backstops(), worked out once (the regression set never
	// changes): pollTransfers asks for every room it scans.
	backstop bool

	// TransferFailed counts requests whose transfer failed or timed out.
	TransferFailed int64
	// StrayChunks counts chunks written for rooms decode no longer holds.
	StrayChunks int64
	// ForeignWrites counts stray chunks that landed in pages another
	// request owns: KV corruption as it happens.
	ForeignWrites int64
	// LostPeerWrites counts KV messages refused because they were
	// addressed to a name decode retired: a prefill declared lost (or
	// given up on) that was still writing. Each is also a stray chunk.
	LostPeerWrites int64
	// Malformed counts prefill notices dropped as malformed.
	Malformed int64
	// MalformedKV counts KV messages refused as malformed: a broken
	// stream (unknown kind, a count over its limit, a message cut short),
	// a chunk for another rank, or a payload that is not whole tokens.
	MalformedKV int64
}

// NewDecode returns an empty decode side.
func NewDecode(cfg DecodeConfig, hist *History) *Decode {
	cfg.defaults()
	if cfg.Probes == nil {
		cfg.Probes = &ProbeCounts{}
	}
	d := &Decode{cfg: cfg, byRid: map[string]*DecodeReq{}, byRoom: map[uint64]*DecodeReq{}, awaiting: map[uint64]*awaitingAck{}, released: map[uint64]time.Time{}, hist: hist, wire: dialectOf(cfg.Wire), probes: cfg.Probes,
		epochs: map[string]int{}, names: map[string]agentName{}}
	d.quiet = len(cfg.Regressions.List()) == 0
	d.backstop = !cfg.Regressions.On(contract.DecodeAbortLeak) && !cfg.Regressions.On(contract.BootstrapThreadDeath)
	d.joined = true
	per := model.KVBytesPerToken / cfg.Ranks
	for r := range cfg.Ranks {
		st := NewStatusTable("decode", r, cfg.Regressions, hist)
		st.probes = cfg.Probes
		st.logChanges = d.quiet
		d.ranks = append(d.ranks, &decodeRank{
			status: st,
			pool:   NewPagePool(cfg.Pages, cfg.PageSize*per),
		})
	}
	return d
}

// Config returns the effective configuration.
func (d *Decode) Config() DecodeConfig { return d.cfg }

// Probes returns the counters the side's code probes count into.
func (d *Decode) Probes() *ProbeCounts { return d.probes }

// Add creates the request's receivers (already initialised: the runtime has
// resolved and registered with the prefill rank) and queues it for
// preallocation.
func (d *Decode) Add(now time.Time, rid string, room uint64, bootstrap string, tokens []model.Token, maxNew int) error {
	if _, ok := d.byRid[rid]; ok {
		d.probes.Hit(contract.ProbeDecodeAddDuplicateRid)
		return fmt.Errorf("add request %s: %s", rid, contract.DuplicateRidRefusal)
	}
	_, held := d.byRoom[room]
	_, acking := d.awaiting[room]
	if held || acking {
		// A room whose aborted request's pages wait for prefill's ACK is
		// still in use: prefill may yet write that request's KV into them,
		// and a second abort of the room would lose the first's pages.
		d.probes.Hit(contract.ProbeDecodeAddRoomInUse)
		return fmt.Errorf("add request %s: room %d already in use", rid, room)
	}
	if at, recent := d.released[room]; recent && now.Sub(at) < d.cfg.WaitingTimeout {
		// So is one released less than a waiting timeout ago: prefill's
		// Failed status for the old request, sent as it cleared its side,
		// would fail the new one and free its pages under prefill's
		// writes (notices name the room only).
		d.probes.Hit(contract.ProbeDecodeAddRoomReleasedRecently)
		return fmt.Errorf("add request %s: room %d already in use (released %v ago)", rid, room, now.Sub(at).Round(time.Millisecond))
	}
	if d.pagesFor(len(tokens)) > d.cfg.Pages {
		d.probes.Hit(contract.ProbeDecodeAddTooLong)
		return fmt.Errorf("add request %s: %w (%d tokens)", rid, ErrTooLong, len(tokens))
	}
	req := &DecodeReq{Rid: rid, Room: room, Bootstrap: bootstrap, Tokens: tokens, MaxNew: maxNew, Added: now,
		pages: make([][]uint32, len(d.ranks)), chunks: make([]map[int]bool, len(d.ranks)),
		lastID: make([]int, len(d.ranks)), aux: make([]bool, len(d.ranks)), succeeded: make([]bool, len(d.ranks)),
		received: make([]bool, len(d.ranks)), failNoticed: make([]bool, len(d.ranks))}
	for r, rk := range d.ranks {
		req.chunks[r] = map[int]bool{}
		req.lastID[r] = -1
		rk.status.Update(now, room, Bootstrapping, WriterReceiver, "receiver "+contract.CreatedFor(rid))
		rk.status.Update(now, room, WaitingForInput, WriterReceiver, "receiver init")
		rk.prealloc = append(rk.prealloc, req)
	}
	d.hist.Note(now, room, "decode", 0, contract.RoomEventPagesNeeded, contract.PagesNeeded(d.pagesFor(len(tokens))))
	d.byRid[rid] = req
	d.byRoom[room] = req
	return nil
}

func (d *Decode) pagesFor(tokens int) int { return (tokens + d.cfg.PageSize - 1) / d.cfg.PageSize }

// OnClientGone is decode's HTTP handler seeing its client (the router) go
// away before the whole answer: the request is aborted.
func (d *Decode) OnClientGone(now time.Time, rid string) {
	d.probes.Hit(contract.ProbeDecodeClientGone)
	d.Abort(now, rid)
}

// OnAbortRequest is POST /abort_request {"rid"}: the request is aborted
// as if its client had gone. An empty rid matches nothing (SGLang answers
// 200 whatever matched).
func (d *Decode) OnAbortRequest(now time.Time, rid string) {
	if rid != "" {
		d.probes.Hit(contract.ProbeDecodeAbortEndpoint)
		d.Abort(now, rid)
	}
}

// Abort is decode's abort_request (client disconnect). The fixed engine
// applies it on every rank at the start of the next step.
func (d *Decode) Abort(now time.Time, rid string) bool {
	req, ok := d.byRid[rid]
	if !ok {
		d.probes.Hit(contract.ProbeDecodeAbortUnknown)
		return false
	}
	d.probes.Hit(contract.ProbeDecodeAbort)
	reg := d.cfg.Regressions
	d.hist.Note(now, req.Room, "decode", 0, contract.RoomEventAbortRequest, "client gone rid="+rid)
	switch {
	case reg.On(contract.DecodeAbortLeak):
		// Upstream only flipped the receiver and told prefill; the queues
		// kept the request.
		d.probes.Hit(contract.ProbeDecodeAbortFlipOnly)
		if !req.flipped {
			req.flipped = true
			d.sendAbort(now, req)
		}
	case reg.On(contract.RankDesync) && len(d.ranks) > 1:
		// Rank 0 drops the request from its own lists right away; the
		// other ranks only at the next step.
		d.probes.Hit(contract.ProbeDecodeAbortRank0Early)
		rk := d.ranks[0]
		rk.prealloc = remove(rk.prealloc, req)
		rk.transfer = remove(rk.transfer, req)
		d.aborts = append(d.aborts, rid)
	default:
		d.aborts = append(d.aborts, rid)
	}
	return true
}

func remove(q []*DecodeReq, req *DecodeReq) []*DecodeReq {
	out := q[:0]
	for _, r := range q {
		if r != req {
			out = append(out, r)
		}
	}
	return out
}

func (d *Decode) sendAbort(now time.Time, req *DecodeReq) {
	for r := range d.ranks {
		a := d.cfg.Agents[r]
		d.out = append(d.out, DecodeOut{Bootstrap: req.Bootstrap, Rank: r, Frames: d.wire.Abort(Abort{Room: req.Room, DecodeIP: a.IP, DecodePort: a.NotifyPort})})
	}
	d.hist.Note(now, req.Room, "decode", 0, contract.RoomEventAbortSent, "ABORT to prefill")
}

// TakeOutbound returns and forgets the control messages for prefill.
func (d *Decode) TakeOutbound() []DecodeOut {
	out := d.out
	d.out = nil
	return out
}
