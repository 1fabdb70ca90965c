package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/harness/check"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
)

// Addresses of the simulated deployment: fixed, so traces and room
// records are the same on every replay.
const (
	bootstrapAddr = "10.0.0.1:8998"
	decodeIP      = "10.0.0.2"
	notifyBase    = 9100
	kvBase        = 9200
)

// actor is one engine thread: its step runs when kicked or due.
type actor struct {
	name   string
	queued bool
	step   func()
	fire   func() // a kicked step: clears queued, then steps
}

type worker struct {
	actor
	rank, w    int
	conn, back string // its KV connection, kv/RANK#wW, and the way back (conn<)
	state      int
	chunk      *core.Chunk
	kvInc      int // the decode incarnation its KV connection reaches
}

// Worker states, as the live worker loop moves through them.
const (
	wIdle    = iota
	wHeld    // dequeued, before the pause gate and WorkerSend
	wPosted  // WorkerSend said write; before the write gate
	wWriting // the chunk is on the wire; waiting for decode's reply
)

type inbox struct {
	actor
	frames [][][]byte
	// conns is, per message in frames, the connection it came on
	// (core.Prefill.OnControlFrom; 0 when none).
	conns []uint64
}

// linkNames are the per-rank link names, made once per run.
type linkNames struct {
	ctl, notify, kv []string
}

func newLinkNames(ranks int) linkNames {
	var n linkNames
	for r := range ranks {
		n.ctl = append(n.ctl, contract.ControlLink(r))
		n.notify = append(n.notify, contract.NotifyLink(r))
		n.kv = append(n.kv, contract.KVLink(r))
	}
	return n
}

// linkName is names[rank], or mk(rank) for a rank out of the table.
func (s *run) linkName(names []string, rank int, mk func(int) string) string {
	if rank >= 0 && rank < len(names) {
		return names[rank]
	}
	return mk(rank)
}

// kick makes a actor runnable; the scheduler picks when among the others.
func (s *run) kick(a *actor) {
	if a.queued {
		return
	}
	a.queued = true
	if a.fire == nil { // one closure per actor, not one per kick
		a.fire = func() {
			a.queued = false
			a.step()
		}
	}
	s.after(s.between(0, 50*time.Microsecond), a.name, a.fire)
}

// stopped reports whether a fault window holds the actor, counting it as
// the window's evidence.
func (s *run) stopped(kind, role string, rank, worker int) bool {
	for _, wn := range s.windows {
		if wn.stops(kind, role, rank, worker) {
			wn.affected++
			return true
		}
	}
	return false
}

// frozen reports whether role's process runs no step: stopped by a
// fault window, or (decode) killed and not yet restarted.
func (s *run) frozen(role string) bool {
	return s.down(role) || s.stopped("", role, -1, -1)
}

// down reports whether role's process is killed and not yet restarted.
func (s *run) down(role string) bool {
	return role == contract.SideDecode && s.dDown || role == contract.SidePrefill && s.pDown
}

func (s *run) kickAll() {
	s.kick(&s.pSched)
	s.kick(&s.dSched)
	for _, b := range s.boot {
		s.kick(&b.actor)
	}
	for _, n := range s.notify {
		s.kick(&n.actor)
	}
	for _, ws := range s.workers {
		for _, w := range ws {
			s.kick(&w.actor)
		}
	}
}

// --- prefill ---

func (s *run) prefillStep() {
	if s.frozen("prefill") || s.stopped("stall-scheduler", "prefill", 0, -1) {
		return
	}
	if s.forwarding {
		s.pendingStep = true
		return
	}
	now := s.wall()
	s.prefillFinish(s.p.PopBootstrapped(now))
	tokens := s.p.WaitingTokens()
	inc := s.pInc
	phase2 := func() {
		if s.pInc != inc {
			return // the process that ran the pass died
		}
		now := s.wall()
		fin, fwd := s.p.Forward(now)
		fin = append(fin, s.p.ProcessInflight(now)...)
		s.prefillFinish(fin)
		s.forwarding = false
		if _, more, _ := s.p.QueueLens(); more > 0 {
			s.pendingStep = true // the next batch
		}
		if fwd > 0 {
			s.tracef("prefill/sched", "forward %d tokens", fwd)
			for _, ws := range s.workers {
				for _, w := range ws {
					s.kick(&w.actor)
				}
			}
		}
		if s.pendingStep {
			s.pendingStep = false
			s.kick(&s.pSched)
		}
	}
	if tokens > 0 && s.cfg.PrefillTokensPerSec > 0 {
		s.forwarding = true
		s.after(time.Duration(float64(tokens)/s.cfg.PrefillTokensPerSec*float64(time.Second)), "prefill/sched", phase2)
		return
	}
	phase2()
}

func (s *run) prefillFinish(fin []core.Finish) {
	for _, f := range fin {
		s.tracef("prefill/sched", "finish rid=%s room=%d err=%v", f.Rid, f.Room, f.Err)
		if req, ok := s.pwait[f.Rid]; ok {
			delete(s.pwait, f.Rid)
			req.pLive = false
			status := 200
			if f.Err != nil {
				status = 500 // as the live prefill answers a failed room
			}
			req.legs.PrefillAnswered(status)
		}
	}
	s.prefillOut()
}

// prefillOut sends prefill's queued notices to decode's notify sockets.
func (s *run) prefillOut() {
	for _, o := range s.p.TakeOutbound() {
		var rank int
		if _, err := fmt.Sscanf(o.To, decodeIP+":%d", &rank); err != nil || rank-notifyBase >= len(s.notify) || rank < notifyBase {
			s.tracef("prefill", "notice to unknown %s dropped", o.To)
			continue
		}
		if o.Rank < 0 || o.Rank >= s.cfg.TP {
			s.tracef("prefill", "notice from unknown rank %d dropped", o.Rank)
			continue
		}
		s.push(s.notifyPush[o.Rank*s.cfg.TP+rank-notifyBase], o.Frames)
	}
}

// pushSend sends frames on p's open connection: a control message to
// prefill rank p.rank's bootstrap loop (the pusher said hello, decode's
// registration under its current epoch's name, first on the connection),
// or a notice to decode rank p.rank's notify socket.
func (s *run) pushSend(p *pusher, frames [][]byte) {
	in, peer, lost := s.notify[p.rank], contract.SideDecode, contract.ProbePrefillNoticeSendFailed
	classify := s.noticeKind
	if p.decode {
		in, peer, lost = s.boot[p.rank], contract.SidePrefill, contract.ProbeDecodeControlSendFailed
		classify = s.controlKind
	}
	kind, room := classify(frames)
	m := &msg{kind: kind, room: room, desc: s.framesDesc(frames), frames: frames, size: zmtpLen(frames)}
	inc := s.incarnation(peer)
	conn := s.connOf(p)
	m.deliver = func() {
		if s.down(peer) || s.incarnation(peer) != inc {
			// Sent to a process that died on the way: the connection
			// broke under it, and the next message dials afresh.
			if p.decode {
				s.dprobes.Hit(lost)
			} else {
				s.pprobes.Hit(lost)
			}
			p.connected = false
			s.tracef("net", "LOST %s %s: %s's process died", m.kind, m.desc, peer)
			return
		}
		in.frames = append(in.frames, m.frames) // as it arrived: a fault may have corrupted it
		in.conns = append(in.conns, conn)
		s.kick(&in.actor)
	}
	s.transmit(p.link, m)
}

// connOf names p's current connection, as a live socket's connection id:
// unique in the run, new with every dial (p.gen).
func (s *run) connOf(p *pusher) uint64 {
	if p.id == 0 {
		s.senders++
		p.id = s.senders
	}
	return p.id<<32 | uint64(uint32(p.gen))
}

// incarnation is role's process incarnation (each sigkill starts another).
func (s *run) incarnation(role string) int {
	if role == contract.SidePrefill {
		return s.pInc
	}
	return s.dInc
}

func (s *run) bootStep(rank int) {
	b := s.boot[rank]
	if len(b.frames) == 0 || s.p.Dead(rank) || s.frozen("prefill") || s.stopped("stall-bootstrap-loop", "prefill", rank, -1) {
		return
	}
	f, conn := b.frames[0], b.conns[0]
	b.frames, b.conns = b.frames[1:], b.conns[1:]
	err := s.p.OnControlFrom(s.wall(), rank, f, conn)
	if errors.Is(err, core.ErrLoopDead) {
		s.tracef(b.name, "LOOP DIED: %v", err)
	}
	if s.p.DecodeRestarts != s.restartsSeen {
		// As the live runtime: every worker redials decode's successor.
		s.restartsSeen = s.p.DecodeRestarts
		for _, ws := range s.workers {
			for _, wk := range ws {
				wk.kvInc = s.dInc
			}
		}
	}
	s.prefillOut()
	s.kick(&s.pSched)
	if len(b.frames) > 0 {
		s.kick(&b.actor)
	}
}

func (s *run) workerStep(wk *worker) {
	if s.frozen("prefill") {
		return
	}
	now := s.wall()
	switch wk.state {
	case wIdle:
		c := s.p.WorkerBegin(now, wk.rank, wk.w)
		if c == nil {
			return
		}
		wk.chunk, wk.state = c, wHeld
		s.tracef(wk.name, "begin room=%d chunk=%d last=%v", c.Room, c.ID, c.Last)
		fallthrough
	case wHeld:
		if s.stopped("pause-transfer-workers", "prefill", wk.rank, wk.w) {
			return
		}
		if !s.p.WorkerSend(now, wk.rank, wk.w) {
			s.tracef(wk.name, "skip room=%d chunk=%d (room failed)", wk.chunk.Room, wk.chunk.ID)
			wk.state, wk.chunk = wIdle, nil
			s.prefillOut()
			s.kick(&wk.actor)
			return
		}
		wk.state = wPosted
		fallthrough
	case wPosted:
		if s.stopped("pause-transfer-writes", "prefill", wk.rank, wk.w) {
			return
		}
		wk.state = wWriting
		if d := s.cfg.KVWriteLatency / 2; d > 0 {
			// Posted: the bytes land half-way through the write's time
			// on the wire (EngineConfig.KVWriteLatency), as live.
			inc := s.pInc
			s.after(d, wk.name, func() {
				if s.pInc == inc {
					s.sendChunk(wk)
				}
			})
			return
		}
		s.sendChunk(wk)
	}
}

// sendChunk writes the held chunk (and, after the last, the aux notice) to
// decode's KV listener and ends the worker's step on decode's reply.
func (s *run) sendChunk(wk *worker) {
	c := wk.chunk
	name, back := wk.conn, wk.back
	if c.Rank != wk.rank { // a worker writes its own rank's chunks
		name = fmt.Sprintf("%s#w%d", contract.KVLink(c.Rank), wk.w)
		back = name + "<"
	}
	kvLink := s.linkName(s.names.kv, c.Rank, contract.KVLink)
	pinc := s.pInc
	end := func(err error) {
		if s.pInc != pinc {
			return // the worker died with its process; its write's end reaches no one
		}
		s.tracef(wk.name, "end room=%d chunk=%d err=%v", c.Room, c.ID, err)
		s.p.WorkerEnd(s.wall(), wk.rank, wk.w, err)
		wk.state, wk.chunk = wIdle, nil
		s.prefillOut()
		s.kick(&s.pSched)
		s.kick(&wk.actor)
	}
	switch {
	case s.dDown:
		s.pprobes.Hit(contract.ProbePrefillKVDialFailed)
		wk.kvInc = s.dInc
		s.after(s.baseLatency(), wk.name, func() { end(errors.New("dial kv link: connection refused (decode killed)")) })
		return
	case wk.kvInc != s.dInc:
		// The worker's connection was to a decode process that died:
		// the write goes nowhere and its completion never comes.
		s.pprobes.Hit(contract.ProbePrefillKVReadFailed)
		wk.kvInc = s.dInc
		s.after(s.baseLatency(), wk.name, func() { end(errors.New("read kv reply: connection reset (decode's process died)")) })
		return
	}
	for _, wn := range s.windows {
		if wn.active && wn.f.Link == kvLink && (wn.f.Kind == "reset-peer" || wn.f.Kind == "link-down" || wn.f.Kind == "timeout") {
			wn.affected++
			s.pprobes.Hit(contract.ProbePrefillKVWriteFailed)
			s.after(s.baseLatency(), wk.name, func() { end(errors.New("write kv chunk: connection reset")) })
			return
		}
	}
	s.postKV(wk, "chunk", c, name, back, end)
}

// postKV sends one KV message of wk's (kind "chunk", or "aux": the
// completion notice after a room's last chunk, a message of its own as
// live, so decode can end the room between the two) and ends the
// worker's step on decode's reply.
func (s *run) postKV(wk *worker, kind string, c *core.Chunk, name, back string, end func(error)) {
	desc := ""
	if s.trace != nil {
		desc = fmt.Sprintf("room=%d chunk=%d", c.Room, c.ID)
	}
	inc := s.dInc
	size := contract.KVMessageLen(0, 0, len(c.Agent))
	if kind == "chunk" {
		size = contract.KVMessageLen(len(c.Pages), len(c.Payload), len(c.Agent))
	}
	cut := func() {
		// Decode's KV reader sees the message end mid-frame and drops
		// the connection, as the live listener does.
		if s.dInc == inc && !s.dDown {
			s.d.OnKVUnreadable(s.wall(), c.Rank, c.Room, fmt.Sprintf("read kv %s: unexpected EOF (the connection closed mid-frame)", kind))
		}
	}
	s.transmit(name, &msg{kind: kind, room: c.Room, desc: desc, size: size, cut: cut, deliver: func() {
		if s.dInc != inc {
			s.pprobes.Hit(contract.ProbePrefillKVReadFailed)
			s.after(s.baseLatency(), wk.name, func() { end(errors.New("read kv reply: connection reset (decode's process died)")) })
			return
		}
		if s.frozen("decode") {
			s.after(time.Millisecond, name, func() { s.redeliver(wk, kind, c, name, back, end) })
			return
		}
		s.landKV(wk, kind, c, name, back, end)
	}, lost: func() {
		// kv-chunks dropped it, or a link fault cut it: the relay closed
		// both connections, so the worker's wait for the completion fails.
		s.pprobes.Hit(contract.ProbePrefillKVReadFailed)
		s.after(s.baseLatency(), wk.name, func() { end(fmt.Errorf("read kv reply: connection closed (%s lost)", kind)) })
	}})
}

func (s *run) redeliver(wk *worker, kind string, c *core.Chunk, name, back string, end func(error)) {
	if s.dDown {
		s.pprobes.Hit(contract.ProbePrefillKVReadFailed)
		end(errors.New("read kv reply: connection reset (decode's process died)"))
		return
	}
	if s.frozen("decode") {
		s.after(time.Millisecond, name, func() { s.redeliver(wk, kind, c, name, back, end) })
		return
	}
	s.landKV(wk, kind, c, name, back, end)
}

// landKV applies a chunk or an aux notice of c's, held by wk (or by its
// dead predecessor: bytes on the wire still land), on decode. After an
// accepted last chunk its aux notice follows on the same connection.
func (s *run) landKV(wk *worker, kind string, c *core.Chunk, name, back string, end func(error)) {
	now := s.wall()
	// The name is checked before anything is written, as the live KV
	// listener does (AdmitKV): a write addressed to a name decode retired
	// or never gave out is refused, and counted there.
	active := s.d.AdmitKV(now, c.Rank, c.Room, c.ID, c.Agent)
	if active && kind == "aux" {
		active = s.d.OnAux(now, c.Rank, c.Room)
	} else if active {
		active = s.d.OnChunk(now, c.Rank, c.Room, c.ID, c.Last, c.Pages, c.First, c.Payload)
	}
	var err error
	if !active {
		s.pprobes.Hit(contract.ProbePrefillChunkRefused)
		err = errors.New("decode reports the room inactive")
	}
	s.kick(&s.dSched)
	pinc := s.pInc
	s.put(s.link(back), &msg{kind: "kv-reply", room: c.Room, deliver: func() {
		if err == nil && kind == "chunk" && c.Last {
			if s.pInc == pinc {
				s.postKV(wk, "aux", c, name, back, end)
			}
			return
		}
		if rest := s.cfg.KVWriteLatency - s.cfg.KVWriteLatency/2; rest > 0 {
			s.after(rest, wk.name, func() { end(err) }) // the write's completion comes back at the end
			return
		}
		end(err)
	}}, 0, true)
}

// --- decode ---

func (s *run) decodeStep() {
	if s.d.Hung() || s.frozen("decode") || s.stopped("stall-scheduler", "decode", 0, -1) {
		return
	}
	res, err := s.d.Step(s.wall())
	s.decodeOut()
	for _, t := range res.Tokens {
		if req, ok := s.streams[t.Rid]; ok {
			if t.Done {
				delete(s.streams, t.Rid)
				req.dLive = false
			}
			what := ""
			if s.trace != nil {
				what = fmt.Sprintf("token %d", t.Index)
			}
			s.toClient(req, what, func() { s.onToken(req, t.Piece, t.Done) })
		}
	}
	for _, f := range res.Finished {
		s.tracef("decode/sched", "finish rid=%s room=%d err=%v", f.Rid, f.Room, f.Err)
		if req, ok := s.streams[f.Rid]; ok {
			delete(s.streams, f.Rid)
			req.dLive = false
			msg := fmt.Sprintf("decode room %d: %v", f.Room, f.Err)
			s.toClient(req, "error 500", func() {
				if req.got == 0 {
					// The error is the answer's head (a stream not started).
					if usePrefill, _ := req.legs.DecodeAnswered(500); usePrefill {
						return
					}
				}
				s.onError(req, 500, msg)
			})
		}
	}
	if errors.Is(err, core.ErrCollectiveHang) {
		s.tracef("decode/sched", "HUNG: %v", err)
		return
	}
	if len(res.Tokens) > 0 && s.cfg.DecodeTokensPerSec > 0 && !s.dSched.queued {
		s.dSched.queued = true
		s.after(time.Duration(float64(time.Second)/s.cfg.DecodeTokensPerSec), s.dSched.name, func() {
			s.dSched.queued = false
			s.decodeStep()
		})
	} else if len(res.Tokens) > 0 {
		s.kick(&s.dSched)
	}
}

// decodeOut sends decode's control messages (metadata, ABORTs and their
// resends, re-registrations under a new epoch's name) to the prefill rank
// each names by bootstrap address and rank, as the live sendOut does: one
// for a prefill decode has no route to (forgotten when it was declared
// lost) is dropped and counted.
func (s *run) decodeOut() {
	for _, o := range s.d.TakeOutbound() {
		if !s.routed || o.Bootstrap != bootstrapAddr || o.Rank < 0 || o.Rank >= len(s.boot) {
			s.dprobes.Hit(contract.ProbeDecodeControlNoRoute)
			continue
		}
		s.push(s.ctlPush[o.Rank], o.Frames)
	}
}

func (s *run) notifyStep(rank int) {
	n := s.notify[rank]
	if len(n.frames) == 0 || s.frozen("decode") {
		return
	}
	f := n.frames[0]
	n.frames, n.conns = n.frames[1:], n.conns[1:]
	_ = s.d.OnNotice(s.wall(), rank, f)
	s.kick(&s.dSched)
	if len(n.frames) > 0 {
		s.kick(&n.actor)
	}
}

// heartbeat is decode's check of prefill's /health, judged by
// core's OnHeartbeat as the live heartbeat loop does: a frozen prefill misses;
// core.HeartbeatFailures misses in a row fail its rooms, retire decode's
// name towards it and forget its route, so the next request resolves it
// afresh and every rank registers the new name on a new connection.
// heartbeat is decode's heartbeat thread, as live: every
// HeartbeatInterval a GET to prefill's /health that waits up to one
// interval for its answer. A stopped prefill answers once it continues,
// in time or not; a killed one refuses the connection at once. A GET that
// took the whole interval is followed by the next at once, as a ticker's
// pending tick is.
func (s *run) heartbeat() {
	start := s.now
	next := func() { s.at(max(start+s.cfg.HeartbeatInterval, s.now), "decode/heartbeat", s.heartbeat) }
	if !s.routed || s.frozen("decode") {
		next()
		return
	}
	var wait func()
	wait = func() {
		ok := !s.frozen("prefill")
		if !ok && !s.pDown && s.now-start < s.cfg.HeartbeatInterval {
			s.untilContinues("prefill", start+s.cfg.HeartbeatInterval, "decode/heartbeat", wait)
			return
		}
		if s.routed && !s.frozen("decode") {
			if lost, n := s.d.OnHeartbeat(s.wall(), bootstrapAddr, ok); lost {
				s.tracef("decode/heartbeat", "prefill lost: %d rooms failed, epoch now %d", n, s.d.Epoch(bootstrapAddr))
				s.routed = false
				s.kick(&s.dSched)
			}
		}
		next()
	}
	wait()
}

// tick is the idle loops' check interval: deadlines and queues are looked
// at even when nothing wakes the loops.
func (s *run) tick() {
	s.kick(&s.pSched)
	if !s.dSched.queued {
		s.kick(&s.dSched)
	}
	s.after(s.cfg.CheckInterval, "tick", s.tick)
}

// --- decode's process killed and restarted ---

// killDecode is SIGKILL of decode's process: its actors stop, what it
// held is gone, and every connection to it breaks. The router's streams
// from it end (before the head: the leg failed; after: cut short), KV
// writes in flight fail, notices on the way are lost. The recorder keeps
// the rooms it last read from the dead process, as a live poller does.
func (s *run) killDecode() {
	held, cleared := s.dh.Snapshot()
	s.emit(check.Event{Type: check.EvRooms, Source: "sim/decode", Rooms: &check.RoomsSnap{Role: contract.SideDecode, Held: held, Cleared: len(cleared), Ended: cleared}})
	s.dDown = true
	s.dInc++
	s.routed = false
	s.resetPushers(contract.SideDecode)
	s.continued(contract.SideDecode)
	s.tracef("decode", "KILLED: %d streams cut", len(s.streams))
	for _, n := range s.notify {
		n.frames, n.conns = nil, nil
	}
	for _, rid := range slices.Sorted(maps.Keys(s.streams)) { // map order would break replay
		req := s.streams[rid]
		delete(s.streams, rid)
		req.dLive = false
		s.toClient(req, "connection lost", func() { s.decodeLegLost(req, "decode connection lost") })
	}
}

// decodeLegLost is the router losing decode's leg of req: before decode's
// head it is the leg failing (the client gets a 502), after it the stream
// ending early, as the live router judges them through core.Legs.
func (s *run) decodeLegLost(req *request, why string) {
	if req.got == 0 {
		if usePrefill, _ := req.legs.DecodeAnswered(0); usePrefill || req.ended {
			return
		}
		s.end(req, outcome.Outcome{Kind: outcome.KindError, Status: 502, Message: "decode: " + why})
		return
	}
	early := req.legs.StreamEnded(false, false)
	switch {
	case req.ended:
	case early:
		s.end(req, outcome.Outcome{Kind: outcome.KindError, Status: 502, Message: "decode stream ended early: " + why})
	default:
		// Not judged early (the client is still there): the router ends
		// the answer as complete with what it has, as the live router
		// writes its finish chunk and [DONE].
		s.complete(req)
	}
}

// restartDecode brings decode's process back on the same addresses: an
// empty core with new agent names, so a KV write for its predecessor is
// refused, and a route to prefill it resolves (and registers on) afresh.
func (s *run) restartDecode() {
	if !s.dDown {
		return
	}
	s.retireHistory(contract.SideDecode, s.dh)
	s.dh = core.NewHistory(1 << 30)
	s.d = s.newDecode()
	s.dDown = false
	s.tracef("decode", "RESTARTED: incarnation %d", s.dInc)
	s.kick(&s.dSched)
}

// --- prefill's process killed and restarted ---

// killPrefill is SIGKILL of prefill's process: its scheduler, bootstrap
// loops and workers stop and what they held is gone. The router's
// requests to it fail without an answer (decode's legs go on, to their
// KV or decode's deadlines), KV writes on the way still land but their
// completions reach no one, control messages to it are lost, and decode's
// heartbeat misses until it declares the prefill lost. The recorder keeps
// the rooms it last read from the dead process.
func (s *run) killPrefill() {
	held, cleared := s.ph.Snapshot()
	s.emit(check.Event{Type: check.EvRooms, Source: "sim/prefill", Rooms: &check.RoomsSnap{Role: contract.SidePrefill, Held: held, Cleared: len(cleared), Ended: cleared}})
	s.pDown = true
	s.pInc++
	s.forwarding, s.pendingStep = false, false
	s.resetPushers(contract.SidePrefill)
	s.continued(contract.SidePrefill)
	for _, b := range s.boot {
		b.frames, b.conns = nil, nil
	}
	for _, ws := range s.workers {
		for _, wk := range ws {
			wk.state, wk.chunk = wIdle, nil
		}
	}
	s.tracef("prefill", "KILLED: %d requests cut", len(s.pwait))
	for _, rid := range slices.Sorted(maps.Keys(s.pwait)) { // map order would break replay
		req := s.pwait[rid]
		delete(s.pwait, rid)
		req.pLive = false
		s.transmit(req.toP+"<", &msg{kind: "http", room: req.room, desc: s.describe("connection lost ", req.rid), deliver: func() {
			req.legs.PrefillAnswered(0) // no answer: decode's leg goes on
		}})
	}
}

// restartPrefill brings prefill's process back on the same addresses: an
// empty core that knows no decode until it registers again, which decode
// does on its next connection.
func (s *run) restartPrefill() {
	if !s.pDown {
		return
	}
	s.retireHistory(contract.SidePrefill, s.ph)
	s.ph = core.NewHistory(1 << 30)
	s.p = s.newPrefill()
	s.pDown = false
	s.restartsSeen = 0
	for _, ws := range s.workers {
		for _, wk := range ws {
			wk.kvInc = s.dInc // its workers dial decode afresh
		}
	}
	s.tracef("prefill", "RESTARTED: incarnation %d", s.pInc)
	s.kickAll()
}
