package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// ErrLoopDead is returned by OnControl once the bootstrap loop has died
// (bootstrap-thread-death): the runtime must stop reading control messages,
// exactly as the upstream thread stopped.
var ErrLoopDead = errors.New("bootstrap loop died")

// Errors a prefill request can finish with.
var (
	ErrBootstrapFailed = errors.New("bootstrap failed")
	ErrTransferFailed  = errors.New("kv transfer failed")
)

// PrefillConfig configures the prefill side. Zero values are replaced by
// Defaults.
type PrefillConfig struct {
	Ranks      int // tensor-parallel ranks; default 1
	Workers    int // transfer workers per rank; default 4
	PageSize   int // tokens per KV page; default 16
	ChunkPages int // pages per transfer chunk; default 8
	// PostedWrites is how many chunks of one room a worker takes at once
	// (WorkerBeginPosted), for a runtime that posts them on parallel
	// connections; default 1.
	PostedWrites     int
	BootstrapTimeout time.Duration // default 10s; Bootstrapping longer than this fails
	InflightTimeout  time.Duration // default 10s; inflight longer than this fails
	// MaxPrefillTokens bounds one forward pass's prompt tokens, as
	// SGLang's --max-prefill-tokens does; default DefaultMaxPrefillTokens.
	// A forward takes waiting requests in order while they fit (the first
	// always), so the scheduler's deadline checks run between passes
	// however long the queue.
	MaxPrefillTokens int
	Regressions      contract.Regressions
	// Wire is the control-message dialect; empty (or unknown) is NIXL.
	// Decode must speak the same one.
	Wire contract.Wire
	// Probes receives the code probes' hits; nil: the side counts into
	// its own (Prefill.Probes). The runtime passes the counters it also
	// counts its own branches in.
	Probes *ProbeCounts
}

func (c *PrefillConfig) defaults() {
	if c.Ranks <= 0 {
		c.Ranks = 1
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.PageSize <= 0 {
		c.PageSize = 16
	}
	if c.ChunkPages <= 0 {
		c.ChunkPages = 8
	}
	if c.PostedWrites <= 0 {
		c.PostedWrites = 1
	}
	if c.BootstrapTimeout <= 0 {
		c.BootstrapTimeout = 10 * time.Second
	}
	if c.InflightTimeout <= 0 {
		c.InflightTimeout = 10 * time.Second
	}
	if c.MaxPrefillTokens <= 0 {
		c.MaxPrefillTokens = DefaultMaxPrefillTokens
	}
}

// DefaultMaxPrefillTokens is SGLang's --max-prefill-tokens default.
const DefaultMaxPrefillTokens = contract.DefaultMaxPrefillTokens

// PrefillReq is one request in prefill's scheduler.
type PrefillReq struct {
	Rid           string
	Room          uint64
	Tokens        []model.Token
	Added         time.Time
	InflightSince time.Time
	// predecessor, per rank, is the session_id a decode re-registered with
	// new buffers while this request waited for that rank's TransferInfo:
	// a TransferInfo under that name may be the dead process's.
	predecessor map[int]string
	// moved: the room's status changed since ProcessInflight last looked
	// at it (set from the rank tables' logs).
	moved bool
}

// Finish tells the runtime a request ended; Err nil means Success.
type Finish struct {
	Rid  string
	Room uint64
	Err  error
}

// Chunk is one KV transfer unit from a prefill rank to its decode rank.
type Chunk struct {
	Room     uint64
	ID       int
	Last     bool
	Rank     int
	KVAddr   string   // decode rank's KV listener
	Agent    string   // decode agent the pages belong to (its registration)
	Pages    []uint32 // destination pages on decode
	First    int      // first token position in this chunk
	Payload  []byte   // this rank's slice of KV bytes for the chunk's tokens
	PageSize int
}

// Outbound is a control message prefill sends to a decode rank's notify socket.
type Outbound struct {
	Rank   int
	To     string
	Frames [][]byte
}

type transferInfo struct {
	meta   Metadata
	kvAddr string
	// target is the memory the room's writes are addressed to, from the
	// registration its TransferInfo was filed under (Dialect.KVTarget): a
	// later registration under the same name, from a restarted decode,
	// does not move it.
	target string
	at     time.Time
}

type prefillRank struct {
	status      *StatusTable
	peers       map[string]Registration
	infos       map[uint64]transferInfo
	queues      [][]*Chunk
	held        map[int]*Chunk
	posted      map[int][]*Chunk // chunks held with held[w], same room (WorkerBeginPosted)
	pendingAck  map[uint64]Abort
	pendingFail map[uint64]Outbound
	// unnoticed holds rooms prefill failed and cleared before decode's
	// TransferInfo reached this rank, by when: decode, which registered
	// for the room after, would otherwise wait for it to its waiting
	// timeout. The metadata, when it comes, is answered Failed.
	unnoticed map[uint64]time.Time
	// answeredFailed holds rooms whose TransferInfo prefill answered with a
	// Failed status, by when. A TransferInfo names the room only: it may
	// have been a newer request's in the same room (a client retrying
	// into its room), which that status failed on decode, and whose own
	// request reaches prefill next; decode never sends it another. Add
	// fails such a request at once (request-after-fail-notice).
	answeredFailed map[uint64]time.Time
	// connRegs is the registration last sent on each connection, by the
	// runtime's connection id (OnControlFrom), at most maxConnRegs of the
	// newest connections.
	connRegs map[uint64]Registration
	dead     bool
}

// maxConnRegs bounds the connections a rank remembers a registration of:
// a peer dialling a new connection with every message must not grow it
// without bound. Connection ids only grow, so the oldest go first; a
// TransferInfo on a forgotten connection is filed by name, as before.
const maxConnRegs = 1024

// Prefill is the prefill side's scheduler, bootstrap-loop and transfer-worker
// logic for all its TP ranks. It is pure: callers hold a lock around each
// method and pass the time in.
type Prefill struct {
	cfg        PrefillConfig
	ranks      []*prefillRank
	bootstrapQ []*PrefillReq
	waitingQ   []*PrefillReq
	inflightQ  []*PrefillReq
	byRid      map[string]*PrefillReq
	byRoom     map[uint64]*PrefillReq
	hist       *History
	out        []Outbound
	wire       Dialect
	probes     *ProbeCounts
	// lastTokens and lastKV are the last prompt promptKV made, and its KV
	// (read-only: chunk payloads are pieces of it).
	lastTokens []model.Token
	lastKV     []byte
	// backstop is backstops(): no regression that removes the deadlines
	// is on (the regression set never changes).
	backstop bool
	// quiet: no regression is on, and the rank tables log the rooms whose
	// status they change, for ProcessInflight and sweep to look at those
	// alone; due is the earliest InflightSince of the requests the last
	// full pass over inflightQ kept, joined whether requests joined since.
	quiet  bool
	due    time.Time
	joined bool

	// BootstrapFailed counts requests failed while bootstrapping.
	BootstrapFailed int64
	// TransferFailed counts requests failed after bootstrap.
	TransferFailed int64
	// DecodeRestarts counts registrations of a new agent at a notify
	// address another had registered: a decode process restarted. A
	// runtime that keeps KV connections open redials them on a change,
	// as a NIXL prefill connects afresh to the new remote agent.
	DecodeRestarts int64
	// Malformed counts control messages dropped as malformed.
	Malformed int64
}

// NewPrefill returns an empty prefill side.
func NewPrefill(cfg PrefillConfig, hist *History) *Prefill {
	cfg.defaults()
	if cfg.Probes == nil {
		cfg.Probes = &ProbeCounts{}
	}
	p := &Prefill{cfg: cfg, byRid: map[string]*PrefillReq{}, byRoom: map[uint64]*PrefillReq{}, hist: hist, wire: dialectOf(cfg.Wire), probes: cfg.Probes,
		backstop: backstopsOn(cfg.Regressions), quiet: len(cfg.Regressions.List()) == 0}
	for r := range cfg.Ranks {
		st := NewStatusTable("prefill", r, cfg.Regressions, hist)
		st.probes = cfg.Probes
		st.logChanges = p.quiet
		p.ranks = append(p.ranks, &prefillRank{
			status:         st,
			peers:          map[string]Registration{},
			connRegs:       map[uint64]Registration{},
			infos:          map[uint64]transferInfo{},
			queues:         make([][]*Chunk, cfg.Workers),
			held:           map[int]*Chunk{},
			posted:         map[int][]*Chunk{},
			pendingAck:     map[uint64]Abort{},
			pendingFail:    map[uint64]Outbound{},
			unnoticed:      map[uint64]time.Time{},
			answeredFailed: map[uint64]time.Time{},
		})
	}
	return p
}

// Config returns the effective configuration.
func (p *Prefill) Config() PrefillConfig { return p.cfg }

// Probes returns the counters the side's code probes count into.
func (p *Prefill) Probes() *ProbeCounts { return p.probes }

// Add creates the request's sender on every rank and queues it for bootstrap.
func (p *Prefill) Add(now time.Time, rid string, room uint64, tokens []model.Token) error {
	if _, ok := p.byRid[rid]; ok {
		p.probes.Hit(contract.ProbePrefillAddDuplicateRid)
		return fmt.Errorf("add request %s: %s", rid, contract.DuplicateRidRefusal)
	}
	if _, ok := p.byRoom[room]; ok {
		p.probes.Hit(contract.ProbePrefillAddRoomInUse)
		return fmt.Errorf("add request %s: room %d already in use", rid, room)
	}
	if !p.cfg.Regressions.On(contract.UnknownRoomWaiting) && p.draining(room) {
		// The room's last request is finished, but its workers still hold
		// or queue its chunks; a new request would reset the room's status
		// and the workers would write those chunks into it. Upstream takes
		// the room, and an old chunk's failure there is what clears the new
		// request's TransferInfo in unknown-room-waiting, so that
		// regression takes it too.
		p.probes.Hit(contract.ProbePrefillAddRoomInUse)
		return fmt.Errorf("add request %s: room %d already in use (the last request's KV writes are still draining)", rid, room)
	}
	req := &PrefillReq{Rid: rid, Room: room, Tokens: tokens, Added: now}
	p.byRid[rid] = req
	p.byRoom[room] = req
	for rank, r := range p.ranks {
		opened := r.status.Has(room) // by decode's TransferInfo, before the request
		r.status.Update(now, room, Bootstrapping, WriterSender, "sender "+contract.CreatedFor(rid))
		if opened {
			p.hist.Note(now, room, "prefill", rank, contract.RoomEventRequest, "sender "+contract.CreatedFor(rid))
		}
	}
	for _, r := range p.ranks {
		// Off with a regression on: the regressions reproduce engines
		// that predate this defence, in scenarios that reuse rooms.
		if _, noticed := r.answeredFailed[room]; noticed && len(p.cfg.Regressions) == 0 {
			if _, fresh := r.infos[room]; !fresh {
				p.probes.Hit(contract.ProbePrefillRequestAfterFailNotice)
				r.status.Update(now, room, Failed, WriterScheduler, "decode was sent a Failed status for this room's TransferInfo since its last request: it may have been this one's")
			}
		}
		delete(r.answeredFailed, room)
	}
	p.bootstrapQ = append(p.bootstrapQ, req)
	return nil
}

// Abort is the scheduler's local abort (client disconnect on prefill): the
// room is failed on every rank and the next step removes the request.
func (p *Prefill) Abort(now time.Time, rid string) bool {
	req, ok := p.byRid[rid]
	if !ok {
		p.probes.Hit(contract.ProbePrefillLocalAbortUnknown)
		return false
	}
	p.hist.Note(now, req.Room, "prefill", 0, contract.RoomEventAbortRequest, "client gone rid="+rid)
	p.probes.Hit(contract.ProbePrefillLocalAbort)
	for _, r := range p.ranks {
		r.status.Update(now, req.Room, Failed, WriterScheduler, "local abort rid="+rid)
	}
	return true
}

// OnClientGone is prefill's HTTP handler seeing its client (the router)
// go away before the answer: the request is aborted or, when prefill no
// longer holds it, the late cancel is recorded on its room.
func (p *Prefill) OnClientGone(now time.Time, room uint64, rid string) {
	p.probes.Hit(contract.ProbePrefillClientGone)
	if !p.Abort(now, rid) {
		p.ClientGone(now, room, rid)
	}
}

// OnAbortRequest is POST /abort_request {"rid"}: the request is aborted
// as if its client had gone. An empty rid matches nothing (SGLang answers
// 200 whatever matched).
func (p *Prefill) OnAbortRequest(now time.Time, rid string) {
	if rid != "" {
		p.probes.Hit(contract.ProbePrefillAbortEndpoint)
		p.Abort(now, rid)
	}
}

// ClientGone records that the client of a request prefill has already
// finished went away: its cancel reached prefill after the room ended.
func (p *Prefill) ClientGone(now time.Time, room uint64, rid string) {
	p.hist.NoteEnded(now, room, "prefill", 0, contract.RoomEventAbortRequest, "client gone after the room ended rid="+rid)
}

// Dead reports whether rank's bootstrap loop has died.
func (p *Prefill) Dead(rank int) bool { return p.ranks[rank].dead }

// OnControl is one step of rank's bootstrap loop: it handles one message
// from decode. It returns ErrLoopDead when the loop must stop.
func (p *Prefill) OnControl(now time.Time, rank int, frames [][]byte) error {
	return p.OnControlFrom(now, rank, frames, 0)
}

// OnControlFrom is OnControl for a runtime that can tell its peers'
// connections apart: conn names the one the message came on (0: unknown).
// A TransferInfo is filed under the registration sent before it on its own
// connection, not the latest one under its name. On Mooncake a restarted
// decode keeps its session_id; a TransferInfo its dead predecessor sent,
// held on the way across the restart, names the old process's pages, and
// filed under the new process's buffers it would write into pages the new
// process hands out. Filed under the old buffers, its writes are refused.
// The bundled decode registers first on every connection; a peer that does
// not (or conn 0) gets its TransferInfos filed by name.
func (p *Prefill) OnControlFrom(now time.Time, rank int, frames [][]byte, conn uint64) error {
	r := p.ranks[rank]
	if r.dead {
		// No probe: both runtimes stop calling a loop once it has died,
		// as nothing read the upstream thread's socket after it died.
		return ErrLoopDead
	}
	die := p.cfg.Regressions.On(contract.BootstrapThreadDeath)
	c, err := p.wire.ParseControl(frames)
	if die && c.Kind == MsgAbort {
		// The loop checks the guard before it knows ABORT (#30352).
		p.probes.Hit(contract.ProbePrefillAbortKillsLoop)
		r.dead = true
		return fmt.Errorf("%w: %s", ErrLoopDead, p.wire.table().unexpectedAbort)
	}
	if err == nil {
		switch c.Kind {
		case MsgAbort:
			p.onAbort(now, rank, c.Abort)
		case MsgRegistration:
			p.noteConnRegistration(rank, conn, c.Registration)
			p.onRegistration(rank, c.Registration)
		case MsgMetadata:
			err = p.onMetadata(now, rank, c.Metadata, conn)
		}
	}
	if err != nil {
		if die {
			p.probes.Hit(contract.ProbePrefillMalformedKillsLoop)
			r.dead = true
			return fmt.Errorf("%w: %v", ErrLoopDead, err)
		}
		p.probes.Hit(contract.ProbePrefillMalformedControl)
		p.Malformed++
	}
	return nil
}

// noteConnRegistration remembers reg as what connection conn of rank's
// bootstrap socket registered, duplicates included: a reconnecting decode
// registers again on its new connection.
func (p *Prefill) noteConnRegistration(rank int, conn uint64, reg Registration) {
	if conn == 0 {
		return
	}
	regs := p.ranks[rank].connRegs
	if _, ok := regs[conn]; !ok && len(regs) >= maxConnRegs {
		delete(regs, slices.Min(slices.Collect(maps.Keys(regs))))
	}
	regs[conn] = reg
}

func (p *Prefill) onRegistration(rank int, reg Registration) {
	r := p.ranks[rank]
	restarted := false
	if old, ok := r.peers[reg.AgentName]; ok {
		if old.KVBase == reg.KVBase { // the same registration again: the first one stands
			p.probes.Hit(contract.ProbePrefillRegistrationDuplicate)
			return
		}
		// Same name, new buffers: a decode process restarted under the
		// same session_id (Mooncake). Its registration replaces the old
		// one, as SGLang's decode_kv_args_table does, but rooms filed
		// under the old one keep writing to the old buffers
		// (transferInfo.target), which the new process refuses.
		restarted = true
		// A TransferInfo still to come under this name cannot be told
		// from the dead process's (one held on the way, or queued behind
		// the new registration): for a request prefill holds already, it
		// is refused (onMetadata), so no write of the old process's room
		// can land in pages the new one hands out.
		for _, req := range p.byRoom {
			if _, has := r.infos[req.Room]; !has {
				if req.predecessor == nil {
					req.predecessor = map[int]string{}
				}
				req.predecessor[rank] = reg.AgentName
			}
		}
	}
	for _, old := range r.peers {
		if !restarted && old.DecodeIP == reg.DecodeIP && old.DecodePort == reg.DecodePort {
			// Same notify socket, new agent: the decode process restarted.
			restarted = true
		}
	}
	if restarted {
		p.probes.Hit(contract.ProbePrefillDecodeRestarted)
		p.DecodeRestarts++
	}
	r.peers[reg.AgentName] = reg
}

func (p *Prefill) onMetadata(now time.Time, rank int, m Metadata, conn uint64) error {
	r := p.ranks[rank]
	failedAt, failed := r.unnoticed[m.Room]
	abortedAt, aborted := r.status.tombstonedAt(m.Room)
	// A request failed here after the abort (a client retrying in its own
	// room meets the tombstone and fails at once): this metadata may be that
	// request's, and decode waits for its verdict, so it is answered below.
	newerFailure := failed && failedAt.After(abortedAt)
	if _, owned := p.byRoom[m.Room]; !owned && !r.status.Has(m.Room) && aborted && !newerFailure {
		// Metadata for a room decode aborted: keep nothing, or the room
		// would be reopened just to be swept later. It is the aborted
		// request's, late, or a new request's in the same room (a client
		// retrying in its own room, its metadata ahead of the request);
		// prefill fails such a request on the tombstone when it comes, so
		// decode is told Failed now, as upstream answers a TransferInfo
		// that meets a tombstone. A decode that no longer holds the room
		// ignores it.
		p.probes.Hit(contract.ProbePrefillMetadataAfterAbort)
		delete(r.unnoticed, m.Room)
		p.out = append(p.out, Outbound{Rank: rank, To: notifyAddr(m), Frames: p.wire.Status(m.Room, Failed, rank, "room aborted earlier")})
		p.hist.NoteEnded(now, m.Room, "prefill", rank, contract.RoomEventFailNotice, "Failed status sent to decode: metadata for a room aborted earlier")
		return nil
	}
	if failed && !r.status.Has(m.Room) {
		if _, owned := p.byRoom[m.Room]; !owned {
			// The room failed here before decode registered for it (the
			// client's abort reached prefill first, a bootstrap deadline):
			// tell decode now rather than leave it to its waiting timeout.
			p.probes.Hit(contract.ProbePrefillMetadataAfterFailure)
			delete(r.unnoticed, m.Room)
			p.out = append(p.out, Outbound{Rank: rank, To: notifyAddr(m), Frames: p.wire.Status(m.Room, Failed, rank, "failed before its metadata arrived")})
			r.answeredFailed[m.Room] = now
			p.hist.NoteEnded(now, m.Room, "prefill", rank, contract.RoomEventFailNotice, "Failed status sent to decode: the room failed before its metadata arrived")
			return nil
		}
	}
	peer, ok := r.peers[m.AgentName]
	if !ok {
		p.probes.Hit(contract.ProbePrefillMetadataUnknownAgent)
		return fmt.Errorf("%w: metadata for room %d from unregistered agent %q", ErrMalformed, m.Room, m.AgentName)
	}
	if req, owned := p.byRoom[m.Room]; owned && req.predecessor[rank] == m.AgentName && m.AgentName != "" {
		p.probes.Hit(contract.ProbePrefillMetadataFromPredecessor)
		delete(req.predecessor, rank)
		why := "TransferInfo under a session_id decode re-registered with new buffers since the request came: it may be the dead process's"
		r.status.Update(now, m.Room, Failed, WriterBootstrap, why)
		p.out = append(p.out, Outbound{Rank: rank, To: notifyAddr(m), Frames: p.wire.Status(m.Room, Failed, rank, why)})
		p.hist.Note(now, m.Room, "prefill", rank, contract.RoomEventFailNotice, "Failed status sent to decode: "+why) // the room is held: NoteEnded would keep nothing
		return nil
	}
	if _, dup := r.infos[m.Room]; dup {
		p.probes.Hit(contract.ProbePrefillMetadataDuplicate)
	}
	if _, owned := p.byRoom[m.Room]; !owned {
		p.probes.Hit(contract.ProbePrefillMetadataBeforeRequest)
	}
	base := peer.KVBase
	if reg, ok := r.connRegs[conn]; ok && conn != 0 && reg.AgentName == m.AgentName {
		// The buffers of the process that sent it, whatever registered
		// under its name since (OnControlFrom).
		base = reg.KVBase
	}
	r.infos[m.Room] = transferInfo{meta: m, kvAddr: peer.KVAddr, target: p.wire.KVTarget(peer.AgentName, base), at: now}
	p.hist.Note(now, m.Room, "prefill", rank, contract.RoomEventMetadata, fmt.Sprintf("%d pages from %s", len(m.Pages), m.AgentName))
	r.status.Update(now, m.Room, WaitingForInput, WriterBootstrap, "metadata arrived")
	return nil
}

func (p *Prefill) onAbort(now time.Time, rank int, a Abort) {
	r := p.ranks[rank]
	p.hist.Note(now, a.Room, "prefill", rank, contract.RoomEventAbortReceived, "ABORT from decode")
	_, owned := p.byRoom[a.Room]
	switch held := r.status.Has(a.Room); {
	case held && r.status.Check(a.Room) == Failed, !held && r.status.isTombstoned(a.Room):
		p.probes.Hit(contract.ProbePrefillAbortDuplicate)
	case !held:
		p.probes.Hit(contract.ProbePrefillAbortUnknownRoom)
	case owned && r.status.Check(a.Room) != Success:
		p.probes.Hit(contract.ProbePrefillAbortHeldRoom)
	}
	if r.status.Check(a.Room) != Success || !r.status.Has(a.Room) {
		r.status.Update(now, a.Room, Failed, WriterBootstrap, "decode ABORT")
	} else {
		p.probes.Hit(contract.ProbePrefillAbortAfterSuccess)
	}
	if !owned && r.status.Has(a.Room) && p.backstops() {
		// A room only decode's messages created (no request here): nothing
		// will consume its verdict, so clear it now; the tombstone stops a
		// late request or metadata from reopening it.
		p.probes.Hit(contract.ProbePrefillAbortOrphanCleared)
		delete(r.infos, a.Room)
		r.status.Clear(now, a.Room, "aborted before its request arrived")
		r.status.Tombstone(now, a.Room)
	}
	if p.holding(rank, a.Room) {
		p.probes.Hit(contract.ProbePrefillAbortAckDeferred)
		r.pendingAck[a.Room] = a
		return
	}
	p.ack(now, rank, a)
}

func (p *Prefill) ack(now time.Time, rank int, a Abort) {
	p.out = append(p.out, Outbound{Rank: rank, To: hostPort(a.DecodeIP, a.DecodePort), Frames: p.wire.AbortAck(a.Room, rank)})
	p.hist.Note(now, a.Room, "prefill", rank, contract.RoomEventAbortAck, "in-flight writes drained")
}

// draining reports whether a worker of any rank still holds, has posted
// or queues a chunk of room.
func (p *Prefill) draining(room uint64) bool {
	for rank, r := range p.ranks {
		if p.holding(rank, room) {
			return true
		}
		for _, qs := range [][][]*Chunk{r.queues, slices.Collect(maps.Values(r.posted))} {
			for _, q := range qs {
				for _, c := range q {
					if c.Room == room {
						return true
					}
				}
			}
		}
	}
	return false
}

func (p *Prefill) holding(rank int, room uint64) bool {
	for _, c := range p.ranks[rank].held {
		if c.Room == room {
			return true
		}
	}
	return false
}

// TakeOutbound returns and forgets the notices waiting to be sent to decode.
func (p *Prefill) TakeOutbound() []Outbound {
	out := p.out
	p.out = nil
	return out
}

// hostPort joins an address as net.JoinHostPort does (IPv6 in brackets),
// without importing the network stack into the pure core.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
