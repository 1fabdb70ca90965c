package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

const (
	stagePrealloc = iota
	stageTransfer
	stageRunning
)

func (req *DecodeReq) stage() int {
	switch {
	case req.committed:
		return stageRunning
	case !req.MetaSent.IsZero():
		return stageTransfer
	}
	return stagePrealloc
}

func (d *Decode) backstops() bool { return d.backstop }

// Committed reports whether decode holds room with its KV taken as
// complete (decoding, past its transfer).
func (d *Decode) Committed(room uint64) bool {
	req, ok := d.byRoom[room]
	return ok && req.committed
}

// Hung reports whether the scheduler is wedged in a collective.
func (d *Decode) Hung() bool { return d.hung }

// Step is one decode scheduler iteration: rank consensus, pending aborts,
// preallocation (sending metadata), transfer polling, and one token for each
// running request.
func (d *Decode) Step(now time.Time) (DecodeStepResult, error) {
	var res DecodeStepResult
	if d.hung {
		// No probe: both runtimes stop stepping a hung scheduler, as the
		// upstream one never returned from its all-reduce.
		return res, ErrCollectiveHang
	}
	for _, rk := range d.ranks[1:] {
		if len(rk.prealloc) != len(d.ranks[0].prealloc) || len(rk.transfer) != len(d.ranks[0].transfer) {
			d.probes.Hit(contract.ProbeDecodeRanksDesynced)
			d.hung = true
			return res, ErrCollectiveHang
		}
	}
	for _, rid := range d.aborts {
		if req, ok := d.byRid[rid]; ok {
			d.applyAbort(now, req, ErrAborted, "client abort")
			res.Finished = append(res.Finished, DecodeFinish{req.Rid, req.Room, ErrAborted})
		} else {
			// The request finished or failed between the abort and this step.
			d.probes.Hit(contract.ProbeDecodeAbortAfterFinish)
		}
	}
	d.aborts = d.aborts[:0]
	d.forgetReleased(now)

	d.preallocate(now)
	res.Finished = append(res.Finished, d.pollTransfers(now)...)

	keep := d.running[:0]
	for _, req := range d.running {
		if req.generated > 0 && req.generated%attendEvery == 0 {
			// Decode attends to the KV it holds at every step; re-reading it
			// now and then is what makes a page overwritten under a running
			// request change the rest of its answer, as it would on a GPU.
			if seed := d.readSeed(req); seed != req.seed {
				d.probes.Hit(contract.ProbeDecodeKVChanged)
				d.hist.Note(now, req.Room, "decode", 0, "kv-changed", fmt.Sprintf("pages overwritten while decoding, at token %d", req.generated))
				req.seed = seed
			}
		}
		tok := model.OutputToken(req.seed, req.generated)
		out := TokenOut{Rid: req.Rid, Index: req.generated, Piece: model.Piece(tok, req.generated)}
		req.generated++
		if req.generated >= req.MaxNew {
			out.Done = true
			d.release(now, req, Success, "generation done")
		} else {
			keep = append(keep, req)
		}
		res.Tokens = append(res.Tokens, out)
	}
	d.running = keep

	d.expireAcks(now)
	return res, nil
}

// attendEvery is how many tokens pass between re-reads of a running
// request's KV pages.
const attendEvery = 4

// readSeed digests the prompt KV the request's pages hold now, across ranks.
// A re-read of pages no write touched since the last one gives the same
// seed, so it is taken from req.read instead of digesting the bytes again.
func (d *Decode) readSeed(req *DecodeReq) uint64 {
	var writes uint64
	for r, rk := range d.ranks {
		writes += rk.pool.writesTo(req.pages[r])
	}
	if m := &req.read; m.ok && m.writes == writes && m.tokens == len(req.Tokens) && samePages(m.pages, req.pages) {
		return m.seed
	}
	per := model.KVBytesPerToken / len(d.ranks)
	kv := d.kv.next[:0]
	if len(d.ranks) == 1 { // a page's tokens lie in a row: read them in one piece
		pool, ps, n := d.ranks[0].pool, d.cfg.PageSize, len(req.Tokens)
		for t := 0; t < n; t += ps {
			kv = pool.appendRead(kv, req.pages[0][t/ps], 0, min(ps, n-t)*per)
		}
	} else { // token by token, each rank's share in turn, a page's rows looked up once
		var zeros [model.KVBytesPerToken]byte
		rows := make([][]byte, len(d.ranks))
		ps, n := d.cfg.PageSize, len(req.Tokens)
		for t0 := 0; t0 < n; t0 += ps {
			for r, rk := range d.ranks {
				rows[r] = rk.pool.page(req.pages[r][t0/ps])
			}
			for off := 0; off < min(ps, n-t0)*per; off += per {
				for _, row := range rows {
					if row == nil {
						kv = append(kv, zeros[:per]...)
					} else {
						kv = append(kv, row[off:off+per]...)
					}
				}
			}
		}
	}
	seed := d.kv.seed(kv)
	req.read = seedRead{ok: true, seed: seed, writes: writes, tokens: len(req.Tokens), pages: slices.Clone(req.pages)}
	return seed
}

// kvDigests digests KV streams (a request's prompt KV read from its pages)
// resuming from the last stream digested: streams share their start (the
// system prompt every agent sends), and an FNV state depends only on the
// bytes before it, so the blocks equal to the last stream's are not hashed
// again. The seed is model.Seed of the stream, whatever came before.
type kvDigests struct {
	last, next []byte         // the last stream digested; a buffer for the next
	marks      []model.Digest // marks[i]: the digest of last[:(i+1)*kvBlock]
}

const kvBlock = 1024

func (k *kvDigests) seed(kv []byte) uint64 {
	i := 0 // whole blocks equal to the last stream's
	for i < len(k.marks) && (i+1)*kvBlock <= len(kv) && string(kv[i*kvBlock:(i+1)*kvBlock]) == string(k.last[i*kvBlock:(i+1)*kvBlock]) {
		i++
	}
	dg := model.NewDigest()
	if i > 0 {
		dg = k.marks[i-1]
	}
	k.marks = k.marks[:i]
	for off := i * kvBlock; off+kvBlock <= len(kv); off += kvBlock {
		dg = dg.Write(kv[off : off+kvBlock])
		k.marks = append(k.marks, dg)
	}
	dg = dg.Write(kv[len(k.marks)*kvBlock:])
	k.last, k.next = kv, k.last
	return dg.Seed()
}

// seedRead is a request's last digest of its pages and what it read.
type seedRead struct {
	ok     bool
	seed   uint64
	writes uint64 // the pages' write counts summed
	tokens int
	pages  [][]uint32 // per rank, the page lists read (the lists are never changed in place)
}

func samePages(a, b [][]uint32) bool {
	return slices.EqualFunc(a, b, func(x, y []uint32) bool { return slices.Equal(x, y) })
}

func (d *Decode) preallocate(now time.Time) {
	d.scan = append(d.scan[:0], d.ranks[0].prealloc...)
	for _, req := range d.scan {
		if req.flipped {
			d.probes.Hit(contract.ProbeDecodePreallocSkipFlipped)
			continue // lingers: nothing will ever move it (decode-abort-leak)
		}
		if d.failedOnAnyRank(req.Room) {
			// Failed while it waited (its prefill was lost): moved on with
			// no pages and no metadata, so pollTransfers ends it. Metadata
			// sent now would name prefill's new epoch, and a write admitted
			// under it would land in pages freed in the same step.
			d.probes.Hit(contract.ProbeDecodePreallocFailed)
			for _, rk := range d.ranks {
				rk.prealloc = remove(rk.prealloc, req)
				rk.transfer = append(rk.transfer, req)
			}
			d.joined = true
			continue
		}
		n := d.pagesFor(len(req.Tokens))
		ok := true
		for r, rk := range d.ranks {
			pages, got := rk.pool.Alloc(n, req.Room)
			if !got {
				for r2 := range r {
					d.ranks[r2].pool.Free(req.pages[r2])
					req.pages[r2] = nil
				}
				ok = false
				break
			}
			req.pages[r] = pages
		}
		if !ok {
			d.probes.Hit(contract.ProbeDecodePreallocWaitPages)
			return // FIFO: wait for pages
		}
		for r, rk := range d.ranks {
			a := d.cfg.Agents[r]
			m := Metadata{Room: req.Room, DecodeIP: a.IP, DecodePort: a.NotifyPort, AgentName: d.AgentName(r, req.Bootstrap),
				Pages: req.pages[r], AuxIndex: 0, RequiredDst: 1}
			d.out = append(d.out, DecodeOut{Bootstrap: req.Bootstrap, Rank: r, Frames: d.wire.Metadata(m)})
			rk.prealloc = remove(rk.prealloc, req)
			rk.transfer = append(rk.transfer, req)
		}
		d.joined = true
		req.MetaSent = now
		d.hist.Note(now, req.Room, "decode", 0, contract.RoomEventMetadataSent, fmt.Sprintf("%d pages per rank", n))
	}
}

// failedOnAnyRank reports whether some rank's status of room is Failed.
func (d *Decode) failedOnAnyRank(room uint64) bool {
	for _, rk := range d.ranks {
		if rk.status.Check(room) == Failed {
			return true
		}
	}
	return false
}

// StatusChanges is a count that moves whenever a room's status changes on
// any rank (set, changed or removed): a runtime need not wake the
// scheduler for an event that left it where it was, since the scheduler
// acts on statuses, its own queues and deadlines only.
func (d *Decode) StatusChanges() uint64 {
	var n uint64
	for _, rk := range d.ranks {
		n += rk.status.changes
	}
	return n
}

// pollTransfers ends the transfers whose room reached Success or Failed
// (on the MIN over ranks) or passed its waiting deadline, in queue order.
// With no regression on, only the rooms whose status moved since the last
// look are looked at: a room left in transfer read neither Success nor
// Failed then and reads the same until its status changes, unless a room
// joined since (a full scan) or the earliest deadline passed (a full scan).
func (d *Decode) pollTransfers(now time.Time) []DecodeFinish {
	onlyMoved := d.quiet && !d.joined && now.Sub(d.due) <= d.cfg.WaitingTimeout
	some := false
	for _, rk := range d.ranks {
		for _, room := range rk.status.moved {
			if req, ok := d.byRoom[room]; ok {
				req.moved, some = true, true
			}
		}
		rk.status.moved = rk.status.moved[:0]
	}
	if onlyMoved && !some {
		return nil
	}
	if !onlyMoved {
		d.joined = false
		defer d.noteDue() // a partial scan only takes rooms out: due stays a lower bound
	}
	var fin []DecodeFinish
	d.scan = append(d.scan[:0], d.ranks[0].transfer...)
	for _, req := range d.scan {
		if onlyMoved && !req.moved {
			continue
		}
		req.moved = false
		s := Success
		for _, rk := range d.ranks {
			s = min(s, rk.status.Check(req.Room))
		}
		if s != Success && s != Failed && d.backstops() && now.Sub(req.MetaSent) > d.cfg.WaitingTimeout {
			d.probes.Hit(contract.ProbeDecodeWaitingTimeout)
			d.TransferFailed++
			d.applyAbort(now, req, ErrWaitingTimout, contract.LookupBackstop(contract.BackstopWaiting).Detail)
			fin = append(fin, DecodeFinish{req.Rid, req.Room, ErrWaitingTimout})
			continue
		}
		switch s {
		case Success:
			req.seed = d.readSeed(req)
			req.committed = true
			for _, rk := range d.ranks {
				rk.transfer = remove(rk.transfer, req)
			}
			d.running = append(d.running, req)
			d.hist.Note(now, req.Room, "decode", 0, contract.RoomEventCommitted, "transfer done, decoding")
		case Failed:
			d.probes.Hit(contract.ProbeDecodeTransferFailed)
			d.TransferFailed++
			for _, rk := range d.ranks {
				rk.transfer = remove(rk.transfer, req)
			}
			if req.unfenced {
				// Lost prefill, writes not refusable: tell it to stop and
				// keep the pages until it says its writes have drained.
				d.sendAbort(now, req)
				d.awaiting[req.Room] = &awaitingAck{pages: req.pages, acked: make([]bool, len(d.ranks)), since: now, bootstrap: req.Bootstrap}
				req.pages = make([][]uint32, len(d.ranks))
				d.holdUnfenced(now, req.Room, "prefill "+req.Bootstrap+" lost during the transfer")
			} else if drained, some := req.drainedRanks(); some && slices.Contains(drained, false) {
				// Failed by some prefill ranks' statuses (the TP ranks
				// share one poll): the others may still be writing their
				// KV. Their pages wait for their own Failed status, sent
				// once their writes drained, as pages wait for an ACK.
				d.probes.Hit(contract.ProbeDecodeFailedRanksWriting)
				d.awaiting[req.Room] = &awaitingAck{pages: req.pages, acked: drained, since: now, bootstrap: req.Bootstrap, onStatus: true}
				req.pages = make([][]uint32, len(d.ranks))
				d.hist.Note(now, req.Room, "decode", 0, contract.RoomEventPagesHeld, "other prefill ranks may still write: their pages wait for their Failed status")
			}
			d.release(now, req, Failed, "transfer failed")
			fin = append(fin, DecodeFinish{req.Rid, req.Room, ErrDecodeFailed})
		}
	}
	return fin
}

// noteDue records the earliest MetaSent of the rooms in transfer, after
// a full scan.
func (d *Decode) noteDue() {
	d.due = time.Time{}
	for i, req := range d.ranks[0].transfer {
		if i == 0 || req.MetaSent.Before(d.due) {
			d.due = req.MetaSent
		}
	}
}

// applyAbort removes the request from every rank's queues at once, tells
// prefill, and frees pages only after prefill acknowledges (unless
// free-before-ack).
func (d *Decode) applyAbort(now time.Time, req *DecodeReq, cause error, why string) {
	st := req.stage()
	switch st {
	case stagePrealloc:
		d.probes.Hit(contract.ProbeDecodeAbortInPrealloc)
	case stageRunning:
		d.probes.Hit(contract.ProbeDecodeAbortWhileRunning)
	}
	for _, rk := range d.ranks {
		rk.prealloc = remove(rk.prealloc, req)
		rk.transfer = remove(rk.transfer, req)
		rk.status.Update(now, req.Room, Failed, WriterReceiver, why)
	}
	d.running = remove(d.running, req)
	if st != stageRunning {
		d.sendAbort(now, req)
	}
	if st == stageTransfer && d.cfg.Regressions.On(contract.FreeBeforeAck) {
		d.probes.Hit(contract.ProbeDecodeFreeBeforeAck)
	}
	if st == stageTransfer && !d.cfg.Regressions.On(contract.FreeBeforeAck) {
		d.probes.Hit(contract.ProbeDecodeAbortInTransfer)
		d.awaiting[req.Room] = &awaitingAck{pages: req.pages, acked: make([]bool, len(d.ranks)), since: now, bootstrap: req.Bootstrap}
		req.pages = make([][]uint32, len(d.ranks))
	}
	d.release(now, req, Failed, why+": "+cause.Error())
}

// release frees what the request still holds and clears its room.
func (d *Decode) release(now time.Time, req *DecodeReq, final KVPoll, why string) {
	for r, rk := range d.ranks {
		rk.pool.Free(req.pages[r])
		req.pages[r] = nil
		if final == Success {
			rk.status.Update(now, req.Room, Success, WriterReceiver, why)
		}
		rk.status.Clear(now, req.Room, why)
	}
	d.hist.Forget(req.Room)
	delete(d.byRid, req.Rid)
	delete(d.byRoom, req.Room)
	d.released[req.Room] = now
	d.releasedQ = append(d.releasedQ, releasedRoom{req.Room, now})
}

// releasedRoom is one release, in the order released rooms age out.
type releasedRoom struct {
	room uint64
	at   time.Time
}

// forgetReleased ages out the rooms released a waiting timeout ago or
// more (a later release of the same room keeps its own entry).
func (d *Decode) forgetReleased(now time.Time) {
	n := 0
	for _, r := range d.releasedQ {
		if now.Sub(r.at) < d.cfg.WaitingTimeout {
			break
		}
		if d.released[r.room].Equal(r.at) {
			delete(d.released, r.room)
		}
		n++
	}
	d.releasedQ = d.releasedQ[n:]
}

// drainedRanks says, per rank, whether prefill can no longer write the
// room's KV there: its transfer completed, or that rank's prefill
// reported the room Failed (after its writes drained); some is whether any
// rank's prefill reported it Failed.
func (req *DecodeReq) drainedRanks() (drained []bool, some bool) {
	drained = make([]bool, len(req.failNoticed))
	for r := range drained {
		drained[r] = req.failNoticed[r] || req.received[r]
		some = some || req.failNoticed[r]
	}
	return drained, some
}

func (d *Decode) freeAwaiting(room uint64) {
	aw := d.awaiting[room]
	for r, rk := range d.ranks {
		rk.pool.Free(aw.pages[r])
	}
	delete(d.awaiting, room)
}

// OnChunk applies one KV chunk to rank's pages, as an RDMA write lands
// without asking whose pages they are, then records it for the room. It
// reports whether the room was active; prefill treats false as a failure.
//
// A payload that is not a whole number of this rank's per-token KV bytes
// is refused before anything is written, counted in MalformedKV, and
// reported as inactive: no peer of ours sends one.
func (d *Decode) OnChunk(now time.Time, rank int, room uint64, id int, last bool, pages []uint32, first int, payload []byte) bool {
	rk := d.ranks[rank]
	per := model.KVBytesPerToken / len(d.ranks)
	if len(payload)%per != 0 {
		d.probes.Hit(contract.ProbeDecodeChunkPartialToken)
		d.RefuseKV(now, rank, room, fmt.Sprintf("chunk %d payload of %d bytes is not whole tokens of %d bytes", id, len(payload), per))
		return false
	}
	for k := 0; k*per < len(payload); {
		t := first + k
		idx := t/d.cfg.PageSize - first/d.cfg.PageSize
		if idx >= len(pages) {
			d.probes.Hit(contract.ProbeDecodeChunkOverrun)
			break
		}
		n := min(d.cfg.PageSize-t%d.cfg.PageSize, len(payload)/per-k) // this page's tokens, in one write
		_ = rk.pool.Write(pages[idx], (t%d.cfg.PageSize)*per, payload[k*per:(k+n)*per])
		k += n
	}
	req, ok := d.byRoom[room]
	if !ok || req.stage() != stageTransfer {
		if !ok {
			d.probes.Hit(contract.ProbeDecodeChunkUnknownRoom)
		} else {
			d.probes.Hit(contract.ProbeDecodeChunkWrongStage)
		}
		d.StrayChunks++
		d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventStrayChunk, fmt.Sprintf("chunk %d for a room decode does not hold", id))
		for _, pg := range pages {
			if owner := rk.pool.Owner(pg); owner != 0 && owner != room {
				// The write landed in pages another request owns now: its
				// KV is corrupted (free-before-ack).
				d.probes.Hit(contract.ProbeDecodeForeignWrite)
				d.ForeignWrites++
				d.hist.Note(now, owner, "decode", rank, contract.RoomEventKVOverwritten, fmt.Sprintf("page %d overwritten by a late write for room %d", pg, room))
				break
			}
		}
		return false
	}
	req.chunks[rank][id] = true
	if last {
		req.lastID[rank] = id
	}
	d.checkDone(now, rank, req)
	return true
}

// RefuseChunk records a chunk decode did not write because it was addressed
// to another agent: the pages of a registration this process never made
// (a restarted decode), as an RDMA write to a stale memory key fails.
func (d *Decode) RefuseChunk(now time.Time, rank int, room uint64, id int, agent string) {
	d.probes.Hit(contract.ProbeDecodeChunkStaleAgent)
	d.StrayChunks++
	d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventStaleRegistration, fmt.Sprintf("chunk %d addressed to agent %q refused", id, agent))
}

// RefuseKV records a KV message decode refused as malformed (why says
// how), for room if the message got as far as naming one (0 otherwise).
func (d *Decode) RefuseKV(now time.Time, rank int, room uint64, why string) {
	d.MalformedKV++
	d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventMalformedKV, why)
}

// OnAux records the completion notice that follows a rank's last chunk.
func (d *Decode) OnAux(now time.Time, rank int, room uint64) bool {
	req, ok := d.byRoom[room]
	if !ok || req.stage() != stageTransfer {
		d.probes.Hit(contract.ProbeDecodeAuxInactive)
		return false
	}
	req.aux[rank] = true
	d.checkDone(now, rank, req)
	return true
}

func (d *Decode) checkDone(now time.Time, rank int, req *DecodeReq) {
	if !req.aux[rank] || req.lastID[rank] < 0 || len(req.chunks[rank]) != req.lastID[rank]+1 {
		return
	}
	if !req.received[rank] {
		req.received[rank] = true
		d.hist.Note(now, req.Room, "decode", rank, contract.RoomEventKVReceived, fmt.Sprintf("%d chunks and the aux received", req.lastID[rank]+1))
	}
	if !d.wire.table().successOnControl {
		d.ranks[rank].status.Update(now, req.Room, Success, WriterReceiver, "all chunks and aux received")
	} else if req.succeeded[rank] {
		d.ranks[rank].status.Update(now, req.Room, Success, WriterReceiver, "all chunks and aux received, and prefill's Success status")
	}
}

// onSuccess is a Mooncake Success status from prefill's rank: the room
// succeeds on that rank once its chunks and aux are in too (they are: the
// status leaves prefill after their last write completed).
func (d *Decode) onSuccess(now time.Time, rank int, room uint64) {
	req, ok := d.byRoom[room]
	if !ok || req.stage() != stageTransfer {
		d.probes.Hit(contract.ProbeDecodeSuccessNoticeInactive)
		d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventSuccessIgnored, "Success status for a room decode no longer transfers")
		return
	}
	req.succeeded[rank] = true
	d.checkDone(now, rank, req)
}

// OnNotice handles a message from a prefill rank: an ABORT_ACK releases
// held pages; a Failed status fails the room without waiting for a timeout.
// A message it cannot parse is counted in Malformed and returned as an
// error; nothing changes.
func (d *Decode) OnNotice(now time.Time, rank int, frames [][]byte) error {
	n, err := d.wire.ParseNotice(frames)
	if err != nil {
		d.probes.Hit(contract.ProbeDecodeMalformedNotice)
		d.Malformed++
		return fmt.Errorf("decode rank %d notice: %w", rank, err)
	}
	switch n.Kind {
	case MsgAbortAck:
		if d.hist.Known(n.Room) { // an ACK for a room decode never had opens no record
			d.hist.Note(now, n.Room, "decode", rank, contract.RoomEventAbortAck, fmt.Sprintf("from prefill rank %d", n.Rank))
		}
		aw, ok := d.awaiting[n.Room]
		if !ok {
			// Late (pages freed on the ACK timeout) or for an abort that
			// held no pages.
			d.probes.Hit(contract.ProbeDecodeAckUnknownRoom)
			break
		}
		if aw.acked[rank] {
			d.probes.Hit(contract.ProbeDecodeAckDuplicate)
		}
		aw.acked[rank] = true
		all := true
		for _, a := range aw.acked {
			all = all && a
		}
		if all {
			d.probes.Hit(contract.ProbeDecodeAckFreesPages)
			d.freeAwaiting(n.Room)
		}
	case MsgStatus:
		switch {
		case n.Status == Success && d.wire.table().successOnControl:
			d.onSuccess(now, rank, n.Room)
		case n.Status != Failed:
			d.probes.Hit(contract.ProbeDecodeStatusNotFailed)
		case d.cfg.Regressions.On(contract.DecodeAbortLeak):
			d.probes.Hit(contract.ProbeDecodeFailNoticeIgnored)
		default:
			req, ok := d.byRoom[n.Room]
			if aw, held := d.awaiting[n.Room]; !ok && held && aw.onStatus && rank < len(aw.acked) {
				// A rank whose pages waited for its writes to drain.
				d.probes.Hit(contract.ProbeDecodeFailNoticeDrained)
				aw.acked[rank] = true
				if !slices.Contains(aw.acked, false) {
					d.freeAwaiting(n.Room)
				}
				break
			}
			if !ok {
				d.probes.Hit(contract.ProbeDecodeFailNoticeUnknownRoom)
				break
			}
			req.failNoticed[rank] = true
			d.probes.Hit(contract.ProbeDecodeFailNotice)
			why := "prefill reported failure"
			if n.Reason != "" {
				why += ": " + n.Reason
			}
			d.ranks[rank].status.Update(now, n.Room, Failed, WriterReceiver, why)
		}
	}
	return nil
}

// DecodeLens reports per-rank queue lengths and occupancy for metrics.
type DecodeLens struct {
	Prealloc, Transfer, Running int
	PagesUsed, PagesTotal       int
	AwaitingAck                 int
	// Pages is the rank's page accounting (pages owned twice, counts).
	Pages PageAccounting
}

// Lens returns rank's queue lengths.
func (d *Decode) Lens(rank int) DecodeLens {
	rk := d.ranks[rank]
	return DecodeLens{Prealloc: len(rk.prealloc), Transfer: len(rk.transfer), Running: len(d.running),
		PagesUsed: rk.pool.Used(), PagesTotal: rk.pool.Total(), AwaitingAck: len(d.awaiting), Pages: rk.pool.Accounting()}
}

// Holding is what rank holds in its queues (Lens's Prealloc, Transfer,
// Running and AwaitingAck summed) without the page accounting, for a
// caller that asks often (the simulator's drain).
func (d *Decode) Holding(rank int) int {
	rk := d.ranks[rank]
	return len(rk.prealloc) + len(rk.transfer) + len(d.running) + len(d.awaiting)
}

// Ranks returns the number of TP ranks.
func (d *Decode) Ranks() int { return len(d.ranks) }

// OnHeartbeat judges one heartbeat to prefill peer bootstrap (ok: it
// answered 200 in time) as SGLang's heartbeat thread does, and when this
// miss declares the peer lost, handles the loss (OnPrefillLost). It
// reports whether the peer was lost and how many rooms that failed; the
// runtime then forgets the peer's route and closes its connections.
func (d *Decode) OnHeartbeat(now time.Time, bootstrap string, ok bool) (lost bool, failed int) {
	if !ok {
		d.probes.Hit(contract.ProbeDecodeHeartbeatMiss)
	}
	lost = d.beats.Observe(bootstrap, ok)
	if lost {
		d.probes.Hit(contract.ProbeDecodePrefillLost)
		failed = d.OnPrefillLost(now, bootstrap)
	}
	return lost, failed
}

// OnPrefillLost is the heartbeat's verdict that the prefill behind
// bootstrap is gone: every room paired with it that has not finished its
// transfer fails now instead of waiting for the waiting timeout, and
// decode's name towards it is retired, so the writes a prefill that was
// only stopped still has in flight are refused when it continues (their
// pages are freed at once and reused). The runtime forgets the route; the
// next resolve registers the new name.
func (d *Decode) OnPrefillLost(now time.Time, bootstrap string) int {
	d.retirePeer(now, bootstrap)
	return d.failPeerRooms(now, bootstrap, contract.PeerLostDetail+bootstrap, true)
}
