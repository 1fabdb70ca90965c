package core

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// StepResult is what one scheduler iteration did.
type StepResult struct {
	Finished []Finish
	// Forwarded is the number of prompt tokens run through forward, so the
	// runtime can spend the configured prefill time on them.
	Forwarded int
}

// poll is the MIN all-reduce of every rank's view of room.
func (p *Prefill) poll(room uint64) KVPoll {
	s := Success
	for _, r := range p.ranks {
		s = min(s, r.status.Check(room))
	}
	return s
}

func (p *Prefill) failAll(now time.Time, room uint64, why string) {
	for _, r := range p.ranks {
		r.status.Update(now, room, Failed, WriterScheduler, why)
	}
}

// clear drops every trace of the room on every rank and tells decode about a
// failure so it need not wait for its timeout (#36612).
func (p *Prefill) clear(now time.Time, req *PrefillReq, final KVPoll, why string) {
	for rank, r := range p.ranks {
		if info, ok := r.infos[req.Room]; ok && final == Failed {
			r.answeredFailed[req.Room] = now // the TransferInfo may be a newer request's
			o := Outbound{Rank: rank, To: notifyAddr(info.meta), Frames: p.wire.Status(req.Room, Failed, rank, why)}
			if p.holding(rank, req.Room) {
				p.probes.Hit(contract.ProbePrefillFailNoticeDeferred)
				r.pendingFail[req.Room] = o
				p.hist.Note(now, req.Room, "prefill", rank, contract.RoomEventFailNoticeDeferred, "Failed status to decode deferred until the worker's write drains")
			} else {
				p.probes.Hit(contract.ProbePrefillFailNotice)
				p.out = append(p.out, o)
				p.hist.Note(now, req.Room, "prefill", rank, contract.RoomEventFailNotice, "Failed status sent to decode: "+why)
			}
		}
		if _, ok := r.infos[req.Room]; !ok && final == Failed && p.backstops() {
			r.unnoticed[req.Room] = now
		}
		delete(r.infos, req.Room)
		r.status.Clear(now, req.Room, why)
	}
	p.hist.Forget(req.Room)
	delete(p.byRid, req.Rid)
	delete(p.byRoom, req.Room)
}

func notifyAddr(m Metadata) string { return fmt.Sprintf("%s:%d", m.DecodeIP, m.DecodePort) }

func (p *Prefill) backstops() bool { return p.backstop }

// backstopsOn is backstops for the regression set, worked out once: the
// scheduler asks for every inflight room at every step, and each On hashes
// a name.
func backstopsOn(reg contract.Regressions) bool {
	return !reg.On(contract.AbortBeforeStatus) && !reg.On(contract.StatusResurrection) && !reg.On(contract.UnknownRoomWaiting) && !reg.On(contract.BootstrapThreadDeath)
}

// Step is one scheduler iteration: pop bootstrapped requests, forward the
// waiting ones (queuing their chunks), and retire inflight requests. The
// live runtime calls the three parts itself so it can spend the forward
// time between them.
func (p *Prefill) Step(now time.Time) StepResult {
	res := StepResult{Finished: p.PopBootstrapped(now)}
	fin, n := p.Forward(now)
	res.Finished = append(res.Finished, fin...)
	res.Forwarded = n
	res.Finished = append(res.Finished, p.ProcessInflight(now)...)
	return res
}

// PopBootstrapped moves requests whose room left Bootstrapping to the
// waiting queue, failing those whose room failed or timed out.
func (p *Prefill) PopBootstrapped(now time.Time) []Finish {
	var fin []Finish
	reg := p.cfg.Regressions
	keep := p.bootstrapQ[:0]
	for _, req := range p.bootstrapQ {
		s := p.poll(req.Room)
		if s == Bootstrapping && !reg.On(contract.AbortBeforeStatus) && !reg.On(contract.BootstrapThreadDeath) && now.Sub(req.Added) > p.cfg.BootstrapTimeout {
			p.probes.Hit(contract.ProbePrefillBootstrapTimeout)
			p.failAll(now, req.Room, contract.LookupBackstop(contract.BackstopBootstrap).Detail)
			s = Failed
		}
		switch s {
		case Bootstrapping:
			keep = append(keep, req)
		case Failed:
			p.probes.Hit(contract.ProbePrefillBootstrapFailed)
			p.BootstrapFailed++
			fin = append(fin, Finish{req.Rid, req.Room, ErrBootstrapFailed})
			p.clear(now, req, Failed, "bootstrap failed")
		default:
			p.waitingQ = append(p.waitingQ, req)
		}
	}
	p.bootstrapQ = keep
	return fin
}

// WaitingTokens is the prompt tokens the next Forward will run (the
// runtime spends the forward pass's time on them first).
func (p *Prefill) WaitingTokens() int {
	_, tokens := p.batch()
	return tokens
}

// batch is how many waiting requests, from the front, the next forward
// takes and their prompt tokens: those within MaxPrefillTokens (the first
// always). Rooms already Failed are dropped from the batch at no cost, as
// SGLang filters them out before the forward.
func (p *Prefill) batch() (n, tokens int) {
	for _, req := range p.waitingQ {
		if p.poll(req.Room) == Failed {
			n++
			continue
		}
		if tokens > 0 && tokens+len(req.Tokens) > p.cfg.MaxPrefillTokens {
			break
		}
		tokens += len(req.Tokens)
		n++
	}
	return n, tokens
}

// Forward runs the next batch of waiting requests (batch), queuing their
// chunks for the transfer workers, and returns the tokens forwarded. The
// rest wait for the next pass (QueueLens says how many).
func (p *Prefill) Forward(now time.Time) ([]Finish, int) {
	var fin []Finish
	n := 0
	k, _ := p.batch()
	for _, req := range p.waitingQ[:k] {
		if p.poll(req.Room) == Failed {
			p.probes.Hit(contract.ProbePrefillFailedBeforeForward)
			p.TransferFailed++
			fin = append(fin, Finish{req.Rid, req.Room, ErrTransferFailed})
			p.clear(now, req, Failed, "failed before forward")
			continue
		}
		n += len(req.Tokens)
		p.queueChunks(now, req)
		req.InflightSince = now
		p.hist.Note(now, req.Room, "prefill", 0, contract.RoomEventForwarded, "KV chunks queued")
		p.inflightQ = append(p.inflightQ, req)
		p.joined = true
	}
	p.waitingQ = append(p.waitingQ[:0], p.waitingQ[k:]...)
	return fin, n
}

// ProcessInflight retires inflight requests whose room is terminal and
// enforces the inflight deadline. With no regression on, it looks only at
// the requests whose room's status moved since its last look: one it
// kept then read neither Success nor Failed and reads the same, unless a
// request joined since or the earliest deadline passed (a full pass).
func (p *Prefill) ProcessInflight(now time.Time) []Finish {
	var fin []Finish
	onlyMoved := p.quiet && !p.joined && now.Sub(p.due) <= p.cfg.InflightTimeout
	for _, r := range p.ranks {
		for _, room := range r.status.moved { // sweep empties the log
			if req, ok := p.byRoom[room]; ok {
				req.moved = true
			}
		}
	}
	keep := p.inflightQ[:0]
	for _, req := range p.inflightQ {
		if onlyMoved && !req.moved {
			keep = append(keep, req)
			continue
		}
		req.moved = false
		s := p.poll(req.Room)
		if (s == WaitingForInput || s == Transferring) && p.backstops() && now.Sub(req.InflightSince) > p.cfg.InflightTimeout {
			p.probes.Hit(contract.ProbePrefillInflightTimeout)
			p.failAll(now, req.Room, contract.LookupBackstop(contract.BackstopInflight).Detail)
			s = Failed
		}
		switch s {
		case Success:
			fin = append(fin, Finish{req.Rid, req.Room, nil})
			p.clear(now, req, Success, "transfer done")
		case Failed:
			p.probes.Hit(contract.ProbePrefillTransferFailed)
			p.TransferFailed++
			fin = append(fin, Finish{req.Rid, req.Room, ErrTransferFailed})
			p.clear(now, req, Failed, "transfer failed")
		default:
			keep = append(keep, req)
		}
	}
	p.inflightQ = keep
	if !onlyMoved {
		p.joined, p.due = false, time.Time{}
		for i, req := range p.inflightQ {
			if i == 0 || req.InflightSince.Before(p.due) {
				p.due = req.InflightSince
			}
		}
	}
	if p.backstops() {
		p.sweep(now)
	}
	return fin
}

// sweep clears rooms no request owns (metadata or ABORT for a request prefill
// never saw, or saw and finished) once they are older than the bootstrap
// timeout, and forgets old tombstones.
func (p *Prefill) sweep(now time.Time) {
	for _, r := range p.ranks {
		for room, info := range r.infos {
			// The age first: most infos are young, and owned.
			if now.Sub(info.at) <= p.cfg.BootstrapTimeout || mutantKeepOrphans {
				continue
			}
			if _, owned := p.byRoom[room]; !owned {
				p.probes.Hit(contract.ProbePrefillOrphanInfoSwept)
				delete(r.infos, room)
				r.status.Clear(now, room, "orphan swept")
				p.hist.Forget(room)
			}
		}
		orphan := func(room uint64) {
			if _, owned := p.byRoom[room]; !owned {
				if _, hasInfo := r.infos[room]; !hasInfo {
					p.probes.Hit(contract.ProbePrefillOrphanStatusSwept)
					r.status.Clear(now, room, "orphan swept")
					p.hist.Forget(room)
				}
			}
		}
		if p.quiet {
			// With no regression on, a status entry is left with neither
			// a request nor an info only by a change to it (a request's
			// end clears its status with its info, the sweeps clear both,
			// an orphan's ABORT both): the rooms the table logged since
			// the last sweep are all there is to look at.
			for _, room := range r.status.moved {
				if r.status.Has(room) {
					orphan(room)
				}
			}
			r.status.moved = r.status.moved[:0]
		} else {
			for room := range r.status.Rooms() {
				orphan(room)
			}
		}
		memory := contract.FailureMemory(contract.EngineConfig{BootstrapTimeout: p.cfg.BootstrapTimeout})
		r.status.ExpireTombstones(now, memory)
		for room, at := range r.answeredFailed {
			if now.Sub(at) > memory {
				delete(r.answeredFailed, room)
			}
		}
		for room, at := range r.unnoticed {
			// Decode's metadata follows its request within a bootstrap
			// timeout, or decode has failed the room itself by then.
			if now.Sub(at) > memory {
				delete(r.unnoticed, room)
			}
		}
	}
}

func (p *Prefill) queueChunks(now time.Time, req *PrefillReq) {
	per := model.KVBytesPerToken / len(p.ranks)
	var kv []byte // the prompt's KV, made when a rank first needs it
	tokensPerChunk := p.cfg.PageSize * p.cfg.ChunkPages
	for rank, r := range p.ranks {
		info, ok := r.infos[req.Room]
		if !ok {
			// Only reachable when an absent room reads WaitingForInput.
			p.probes.Hit(contract.ProbePrefillNoTransferInfo)
			p.hist.Note(now, req.Room, "prefill", rank, "no-transfer-info", "forward without metadata")
			continue
		}
		if kv == nil {
			kv = p.promptKV(req.Tokens)
		}
		w := int(req.Room % uint64(p.cfg.Workers))
		n := len(req.Tokens)
		for id, first := 0, 0; first < n; id, first = id+1, first+tokensPerChunk {
			last := min(first+tokensPerChunk, n)
			var payload []byte
			if len(p.ranks) == 1 { // the whole entries: a piece of kv (no one writes a payload)
				payload = kv[first*per : last*per : last*per]
			} else {
				payload = make([]byte, 0, (last-first)*per)
				for t := first; t < last; t++ {
					e := kv[t*model.KVBytesPerToken:]
					payload = append(payload, e[rank*per:(rank+1)*per]...)
				}
			}
			p0, p1 := first/p.cfg.PageSize, (last+p.cfg.PageSize-1)/p.cfg.PageSize
			var pages []uint32
			if p1 <= len(info.meta.Pages) {
				pages = info.meta.Pages[p0:p1]
			}
			r.queues[w] = append(r.queues[w], &Chunk{Room: req.Room, ID: id, Last: last == n, Rank: rank,
				KVAddr: info.kvAddr, Agent: info.target, Pages: pages, First: first, Payload: payload, PageSize: p.cfg.PageSize})
		}
	}
}

// promptKV is model.PromptKV(tokens), with the entries of the prefix it
// shares with the last prompt copied from that one's instead of computed
// again (every agent prompt starts with the same system prompt).
func (p *Prefill) promptKV(tokens []model.Token) []byte {
	kv := make([]byte, len(tokens)*model.KVBytesPerToken)
	same := 0
	for same < len(tokens) && same < len(p.lastTokens) && tokens[same] == p.lastTokens[same] {
		same++
	}
	copy(kv, p.lastKV[:same*model.KVBytesPerToken])
	for i := same; i < len(tokens); i++ {
		model.KV(kv[i*model.KVBytesPerToken:], tokens[i], i)
	}
	p.lastTokens, p.lastKV = append(p.lastTokens[:0], tokens...), kv
	return kv
}

// WorkerBegin dequeues the next chunk for worker w of rank, skipping chunks
// of dead rooms, and holds it. It returns nil when the queue is empty.
func (p *Prefill) WorkerBegin(now time.Time, rank, w int) *Chunk {
	r := p.ranks[rank]
	for len(r.queues[w]) > 0 {
		c := r.queues[w][0]
		r.queues[w] = r.queues[w][1:]
		if r.status.Check(c.Room) == Failed {
			p.probes.Hit(contract.ProbePrefillWorkerSkipDead)
			continue
		}
		r.held[w] = c
		return c
	}
	return nil
}

// WorkerBeginPosted is WorkerBegin for a runtime that posts several writes
// of a room at once: with the next chunk it takes up to PostedWrites-1 more
// chunks of the same room that follow it in the queue, all held together
// and finished together by WorkerSend and WorkerEnd. The first is the one
// WorkerBegin would return; nil when the queue is empty.
func (p *Prefill) WorkerBeginPosted(now time.Time, rank, w int) []*Chunk {
	c := p.WorkerBegin(now, rank, w)
	if c == nil {
		return nil
	}
	r := p.ranks[rank]
	batch := []*Chunk{c}
	for len(batch) < p.cfg.PostedWrites && len(r.queues[w]) > 0 && r.queues[w][0].Room == c.Room {
		batch = append(batch, r.queues[w][0])
		r.queues[w] = r.queues[w][1:]
	}
	if len(batch) > 1 {
		r.posted[w] = batch[1:]
	}
	return batch
}

// WorkerSend is called after the worker's pause gate: it marks the room
// Transferring and says whether to write the chunk. The fixed engine looks
// again, because an ABORT may have arrived while the worker held the chunk.
func (p *Prefill) WorkerSend(now time.Time, rank, w int) bool {
	r := p.ranks[rank]
	c := r.held[w]
	if c == nil {
		return false
	}
	if !p.cfg.Regressions.On(contract.StatusResurrection) && r.status.Check(c.Room) == Failed {
		p.probes.Hit(contract.ProbePrefillWorkerSendAborted)
		p.release(now, rank, w)
		return false
	}
	r.status.Update(now, c.Room, Transferring, WriterWorker, "chunk "+strconv.Itoa(c.ID)+" start")
	return true
}

// WorkerEnd finishes the held chunk: err is a write failure or decode's
// refusal. The last chunk's success makes the room Success.
func (p *Prefill) WorkerEnd(now time.Time, rank, w int, err error) {
	r := p.ranks[rank]
	c := r.held[w]
	if c == nil {
		return
	}
	switch {
	case err != nil:
		// The note first: it records what the worker saw, whatever the
		// handling below does (rooms-terminal holds the room to it).
		p.hist.Note(now, c.Room, "prefill", rank, contract.RoomEventTransferError, err.Error())
		p.probes.Hit(contract.ProbePrefillTransferError)
		if p.cfg.Regressions.On(contract.UnknownRoomWaiting) {
			p.probes.Hit(contract.ProbePrefillTransferErrorClears)
			// NIXL's failure path cleared the room's state; the Failed
			// write that follows is a no-op on an absent room.
			delete(r.infos, c.Room)
			if _, owned := p.byRoom[c.Room]; owned {
				// Its sender still polls the room, and an absent room
				// reads WaitingForInput: the room is held as that, not
				// cleared, for as long as the request sits inflight.
				r.status.Drop(now, c.Room, "transfer failure cleared state; its sender still polls it")
			} else {
				r.status.Clear(now, c.Room, "transfer failure cleared state")
			}
		}
		r.status.Update(now, c.Room, Failed, WriterWorker, "transfer error")
	case c.Last:
		r.status.Update(now, c.Room, Success, WriterWorker, fmt.Sprintf("last chunk %d done", c.ID))
		p.successNotice(now, rank, c.Room)
	default:
		// Writes posted together complete together: the room succeeds
		// only once its last chunk and every one before it landed.
		for _, pc := range r.posted[w] {
			if pc.Last {
				r.status.Update(now, c.Room, Success, WriterWorker, fmt.Sprintf("last chunk %d done (%d posted writes)", pc.ID, len(r.posted[w])+1))
				p.successNotice(now, rank, c.Room)
			}
		}
	}
	p.release(now, rank, w)
}

// successNotice tells decode's rank that room's KV is all written, on a
// dialect whose success travels on the control plane (Mooncake's
// conclude_transfer), once the room reads Success: a Failed room stays
// Failed and sends nothing here.
func (p *Prefill) successNotice(now time.Time, rank int, room uint64) {
	r := p.ranks[rank]
	info, ok := r.infos[room]
	if !p.wire.table().successOnControl || !ok || r.status.Check(room) != Success {
		return
	}
	p.out = append(p.out, Outbound{Rank: rank, To: notifyAddr(info.meta), Frames: p.wire.Status(room, Success, rank, "")})
	p.hist.Note(now, room, "prefill", rank, contract.RoomEventSuccessNotice, "Success status sent to decode")
}

func (p *Prefill) release(now time.Time, rank, w int) {
	r := p.ranks[rank]
	c := r.held[w]
	delete(r.held, w)
	delete(r.posted, w)
	if a, ok := r.pendingAck[c.Room]; ok && !p.holding(rank, c.Room) {
		p.probes.Hit(contract.ProbePrefillAckAfterDrain)
		delete(r.pendingAck, c.Room)
		p.ack(now, rank, a)
	}
	if o, ok := r.pendingFail[c.Room]; ok && !p.holding(rank, c.Room) {
		p.probes.Hit(contract.ProbePrefillFailNoticeAfterDrain)
		delete(r.pendingFail, c.Room)
		p.out = append(p.out, o)
		p.hist.NoteEnded(now, c.Room, "prefill", rank, contract.RoomEventFailNotice, "Failed status sent to decode once the worker's write drained")
	}
}

// QueueLens reports the bootstrap and inflight queue lengths (the waiting
// queue is drained within each step).
func (p *Prefill) QueueLens() (bootstrap, waiting, inflight int) {
	return len(p.bootstrapQ), len(p.waitingQ), len(p.inflightQ)
}

// Ranks returns the number of TP ranks.
func (p *Prefill) Ranks() int { return len(p.ranks) }

// Workers returns the number of transfer workers per rank.
func (p *Prefill) Workers() int { return p.cfg.Workers }

// Pending reports whether worker w of rank has chunks queued.
func (p *Prefill) Pending(rank, w int) bool { return len(p.ranks[rank].queues[w]) > 0 }
