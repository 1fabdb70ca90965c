package core

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

func TestHeartbeatJudge(t *testing.T) {
	t.Parallel()
	const p, q = "10.0.0.1:8998", "10.0.0.3:8998"
	var h Heartbeat
	steps := []struct {
		peer     string
		ok, lost bool
	}{
		{p, false, false}, // first miss
		{q, false, false}, // another peer's miss counts on its own
		{p, true, false},  // a 200 resets
		{p, false, false},
		{p, false, true}, // HeartbeatFailures in a row: lost
		// Judged afresh once declared lost: a peer that comes back and is
		// lost again is declared again (without the reset the count runs
		// past the threshold and never equals it again).
		{p, false, false},
		{p, false, true},
		{q, false, true},
	}
	for i, s := range steps {
		if got := h.Observe(s.peer, s.ok); got != s.lost {
			t.Fatalf("step %d (%s ok=%v): lost=%v, want %v", i, s.peer, s.ok, got, s.lost)
		}
	}
	if h.Misses(p) != 0 || h.Misses(q) != 0 {
		t.Errorf("misses after loss: %d, %d; want 0, 0", h.Misses(p), h.Misses(q))
	}
}

// dropAborts removes decode's pending ABORTs from the control link (a
// lossy link) and keeps everything else.
func (r *rig) dropAborts() int {
	r.collect()
	keep, n := r.ctl[:0], 0
	for _, o := range r.ctl {
		if c, err := r.d.wire.ParseControl(o.Frames); err == nil && c.Kind == MsgAbort {
			n++
			continue
		}
		keep = append(keep, o)
	}
	r.ctl = keep
	return n
}

// abortInTransfer adds rid for room and aborts it on decode once prefill
// holds its metadata: decode sends an ABORT and keeps the room's pages for
// prefill's ACK.
func (r *rig) abortInTransfer(rid string, room uint64) {
	r.t.Helper()
	r.add(rid, room, prompt(int(room), 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD(rid)
	r.stepD()
}

func hasNote(r *rig, room uint64, kind string) bool {
	held, cleared := r.dh.Snapshot()
	for _, rec := range append(held, cleared...) {
		if rec.Room != room {
			continue
		}
		for _, e := range rec.Events {
			if e.Kind == kind {
				return true
			}
		}
	}
	return false
}

// An ABORT lost once is sent again after the ACK timeout; prefill's ACK
// of the resend frees the pages, and nothing is retired.
func TestAbortResentBeforeFree(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.abortInTransfer("a", 90)
	if n := r.dropAborts(); n != 1 {
		t.Fatalf("%d ABORTs sent, want 1", n)
	}
	r.advance(testAckWait + 1)
	r.stepD()
	if !hasNote(r, 90, "abort-resent") {
		t.Fatal("no abort-resent event after the ACK timeout")
	}
	if r.d.Lens(0).AwaitingAck != 1 {
		t.Fatalf("pages freed at the first ACK timeout (awaiting %d); want them held for the resend", r.d.Lens(0).AwaitingAck)
	}
	r.settle()
	if n := r.d.Probes().Count(contract.ProbeDecodeAckFreesPages); n != 1 {
		t.Errorf("ack-frees-pages hit %d times, want 1 (the resent ABORT's ACK)", n)
	}
	if n := r.d.Probes().Count(contract.ProbeDecodeAckTimeoutFree); n != 0 {
		t.Errorf("ack-timeout-free hit %d times, want 0", n)
	}
	if e := r.d.Epoch(testBootstrap); e != 0 {
		t.Errorf("epoch %d after an acknowledged resend, want 0", e)
	}
	r.checkClean()
}

// Every ABORT lost, A's chunk still in flight: decode frees A's pages only
// after AbortResends resends, and retires prefill's name, so A's late
// write is refused instead of landing in B, which got A's pages.
func TestAbortUnackedRetiresName(t *testing.T) {
	t.Parallel()
	const roomA, roomB = 71, 82 // different workers
	r := newRig(t, rigOpts{})
	r.add("A", roomA, prompt(71, 100), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(roomA)
	cA := r.begin(0, w)
	if cA == nil || !r.send(0, w) {
		t.Fatal("A's first chunk not sent")
	}
	pagesA := append([]uint32(nil), cA.Pages...)
	r.abortD("A")
	r.stepD()
	r.dropAborts()
	for i := range AbortResends + 1 {
		r.advance(testAckWait + 1)
		r.stepD()
		if i < AbortResends && r.d.Lens(0).AwaitingAck != 1 {
			t.Fatalf("A's pages freed after %d ACK timeouts, want %d", i+1, AbortResends+1)
		}
		if n := r.dropAborts(); i < AbortResends && n != 1 {
			t.Fatalf("resend %d: %d ABORTs, want 1", i+1, n)
		}
	}
	if r.d.Lens(0).AwaitingAck != 0 {
		t.Fatal("A's pages still held after every resend went unanswered")
	}
	if e := r.d.Epoch(testBootstrap); e != 1 {
		t.Fatalf("epoch %d after giving up on prefill's ACK, want 1", e)
	}
	r.deliverControl() // the new name's registration
	r.add("B", roomB, prompt(72, 100), 6)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.runWorkers() // B's chunks, under the new name
	if got := r.d.ranks[0].pool.Owner(pagesA[0]); got != roomB {
		t.Fatalf("A's first page is owned by room %d, want B (%d) reusing it", got, roomB)
	}
	if r.land(cA) {
		t.Error("A's late write was accepted")
	}
	r.end(0, w, errRefused)
	if r.d.ForeignWrites != 0 {
		t.Errorf("%d foreign writes, want 0", r.d.ForeignWrites)
	}
	if n := r.d.Probes().Count(contract.ProbeDecodeChunkLostPeer); n != 1 {
		t.Errorf("chunk-lost-peer hit %d times, want 1", n)
	}
	r.settle()
	r.checkAnswer("B")
}

// scriptLostPeerWrite: prefill is declared lost while A's chunk is in
// flight; decode frees A's pages, B is given them, and A's write lands
// when the (only stopped) prefill continues.
func scriptLostPeerWrite(r *rig) {
	const roomA, roomB = 71, 82 // different workers
	r.add("A", roomA, prompt(71, 100), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(roomA)
	cA := r.begin(0, w)
	if cA == nil || !r.send(0, w) {
		r.t.Fatal("A's first chunk not sent")
	}
	if n := r.d.OnPrefillLost(r.now, testBootstrap); n != 1 {
		r.t.Fatalf("%d rooms failed by the loss, want 1", n)
	}
	r.stepD() // A fails; its pages are free
	if len(r.dfin["A"]) != 1 {
		r.t.Fatalf("A finished %v, want failed once", r.dfin["A"])
	}
	// The runtime re-resolves and registers the new name on a new
	// connection.
	if err := r.p.OnControl(r.now, 0, r.d.Registration(0, testBootstrap)); err != nil {
		r.t.Fatal(err)
	}
	r.add("B", roomB, prompt(72, 100), 6)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.runWorkers()
	if r.land(cA) {
		r.t.Error("the lost prefill's late write was accepted")
	}
	r.end(0, w, errRefused)
	r.settle()
}

// A prefill declared lost keeps its rooms' in-flight writes; when it
// continues they are refused, not written into the pages decode freed.
func TestLostPrefillLateWriteRefusedInCore(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	scriptLostPeerWrite(r)
	if r.d.ForeignWrites != 0 || r.d.LostPeerWrites != 1 {
		t.Errorf("foreign writes %d, lost-peer writes %d; want 0, 1", r.d.ForeignWrites, r.d.LostPeerWrites)
	}
	r.checkAnswer("B")
	r.checkClean()
}

// A name decode never handed out is a stale agent, not a lost peer; on
// Mooncake the name is the KV address in every epoch.
func TestAdmitKVNames(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	live := r.d.AgentName(0, testBootstrap)
	if !r.d.AdmitKV(r.now, 0, 1, 0, live) {
		t.Error("the live name was refused")
	}
	r.d.OnPrefillLost(r.now, testBootstrap)
	if r.d.AdmitKV(r.now, 0, 1, 0, live) {
		t.Error("a retired name was admitted")
	}
	if !r.d.AdmitKV(r.now, 0, 1, 0, r.d.AgentName(0, testBootstrap)) {
		t.Error("the new epoch's name was refused")
	}
	if r.d.AdmitKV(r.now, 0, 1, 0, "decode-from-another-process") {
		t.Error("a name never given out was admitted")
	}
	p := r.d.Probes()
	if p.Count(contract.ProbeDecodeChunkLostPeer) != 1 || p.Count(contract.ProbeDecodeChunkStaleAgent) != 1 {
		t.Errorf("lost-peer %d, stale-agent %d; want 1, 1", p.Count(contract.ProbeDecodeChunkLostPeer), p.Count(contract.ProbeDecodeChunkStaleAgent))
	}
	m := newRig(t, rigOpts{wire: contract.WireMooncake})
	name := m.d.AgentName(0, testBootstrap)
	m.d.OnPrefillLost(m.now, testBootstrap)
	if got := m.d.AgentName(0, testBootstrap); got != name || got != m.d.cfg.Agents[0].KVAddr {
		t.Errorf("mooncake name %q then %q, want the KV address %q in every epoch", name, got, m.d.cfg.Agents[0].KVAddr)
	}
}

// scriptLostWhileAwaitingAck: A is aborted in transfer and its ABORT lost;
// prefill is then declared lost, which retires its name and so frees A's
// held pages at once rather than after every resend.
func scriptLostWhileAwaitingAck(r *rig) {
	r.add("A", 73, prompt(73, 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD("A")
	r.stepD()
	r.dropAborts()
	if r.d.Lens(0).AwaitingAck != 1 {
		r.t.Fatalf("awaiting %d ACKs, want A's", r.d.Lens(0).AwaitingAck)
	}
	r.d.OnPrefillLost(r.now, testBootstrap)
	if r.d.Lens(0).AwaitingAck != 0 {
		r.t.Error("A's pages still held after its prefill's name was retired")
	}
	if err := r.p.OnControl(r.now, 0, r.d.Registration(0, testBootstrap)); err != nil {
		r.t.Fatal(err)
	}
	r.settle()
}

func TestPrefillLostFreesAwaitingPages(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	scriptLostWhileAwaitingAck(r)
	if n := r.d.Probes().Count(contract.ProbeDecodeAbortResent); n != 0 {
		t.Errorf("abort-resent hit %d times; the retire should have freed the pages first", n)
	}
	r.checkClean()
}

// A room still waiting for pages when its prefill is declared lost is
// failed there and then; it must get no pages and send no metadata later
// (metadata would name prefill's new epoch, so a late write under it would
// be admitted into pages freed in the same step: found by `pdchaos sim
// prefill-lost`, 112 of 200 seeds failing integrity).
func TestPrefillLostPreallocSendsNoMetadata(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{decodePages: 10})
	r.add("A", 91, prompt(91, 100), 4)
	r.add("B", 92, prompt(92, 100), 4)
	r.stepD()
	if l := r.d.Lens(0); l.Prealloc != 1 || l.Transfer != 1 {
		t.Fatalf("queues %+v: want A in transfer and B waiting for pages", l)
	}
	r.deliverControl()
	r.stepP()
	if n := r.d.OnPrefillLost(r.now, testBootstrap); n != 2 {
		t.Fatalf("%d rooms failed by the loss, want 2 (one in transfer, one waiting for pages)", n)
	}
	for range 3 { // A's pages come free in the first step; B must not take them in a later one
		r.stepD()
		r.collect()
		for _, o := range r.ctl {
			t.Errorf("decode sent %d frames to the lost prefill's bootstrap after the loss: %q", len(o.Frames), o.Frames)
		}
		r.ctl = nil
	}
	if n := r.d.Probes().Count(contract.ProbeDecodePreallocFailed); n != 1 {
		t.Errorf("prealloc-failed hit %d times, want 1", n)
	}
	if len(r.dfin["A"]) != 1 || len(r.dfin["B"]) != 1 {
		t.Errorf("finishes A %v B %v, want each failed once", r.dfin["A"], r.dfin["B"])
	}
	if l := r.d.Lens(0); l.Prealloc+l.Transfer != 0 || l.PagesUsed != 0 {
		t.Errorf("after the loss: %+v, want no queue or page held", l)
	}
}

// On Mooncake no name can be retired, so a prefill declared lost keeps
// its writes' targets: the pages of A (failed in transfer by the loss) and
// of C (aborted, its ABORT lost) wait for prefill's ACK instead of going
// back to the pool. B, which arrives meanwhile, gets other pages, and A's
// late write, admitted as Mooncake must, lands in A's held pages, never in
// B's. On NIXL (TestLostPrefillLateWriteRefusedInCore) the write is
// refused and the pages are freed at once.
func TestLostPrefillMooncakeHoldsPagesUntilAck(t *testing.T) {
	t.Parallel()
	scriptMooncakeLostHoldsPages(newRig(t, rigOpts{wire: contract.WireMooncake}))
}

func scriptMooncakeLostHoldsPages(r *rig) {
	t := r.t
	const roomA, roomB, roomC = 71, 82, 73
	r.add("A", roomA, prompt(71, 100), 4)
	r.add("C", roomC, prompt(73, 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD("C")
	r.stepD()
	r.dropAborts()
	w := workerOf(roomA)
	cA := r.begin(0, w)
	if cA == nil || !r.send(0, w) {
		t.Fatal("A's first chunk not sent")
	}
	used := r.d.Lens(0).PagesUsed
	if n := r.d.OnPrefillLost(r.now, testBootstrap); n != 1 {
		t.Fatalf("%d rooms failed by the loss, want 1 (A)", n)
	}
	r.stepD() // A fails; its pages go to wait for an ACK
	if len(r.dfin["A"]) != 1 {
		t.Fatalf("A finished %v, want failed once", r.dfin["A"])
	}
	if l := r.d.Lens(0); l.AwaitingAck != 2 || l.PagesUsed != used {
		t.Fatalf("after the loss: awaiting %d ACKs, %d pages used; want A's and C's pages held (2, %d)", l.AwaitingAck, l.PagesUsed, used)
	}
	if n := r.d.Probes().Count(contract.ProbeDecodeRetiredPeerFreesPages); n != 0 {
		t.Errorf("retired-peer-frees-pages hit %d times on Mooncake, want 0", n)
	}
	if err := r.p.OnControl(r.now, 0, r.d.Registration(0, testBootstrap)); err != nil {
		t.Fatal(err)
	}
	r.add("B", roomB, prompt(72, 100), 6)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.runWorkers()
	r.land(cA) // the stopped prefill continues: its write lands where it pointed
	r.end(0, w, nil)
	r.settle()
	r.advance(testAckWait + 1) // C's lost ABORT is sent again and acknowledged
	r.settle()
	if r.d.ForeignWrites != 0 {
		t.Errorf("%d foreign writes: a held page was handed to another request", r.d.ForeignWrites)
	}
	p := r.d.Probes()
	if p.Count(contract.ProbeDecodeUnfencedPagesHeld) < 2 || p.Count(contract.ProbeDecodeAckFreesPages) < 2 {
		t.Errorf("unfenced-pages-held %d, ack-frees-pages %d; want at least 2 each (A and C, freed by prefill's ACKs)",
			p.Count(contract.ProbeDecodeUnfencedPagesHeld), p.Count(contract.ProbeDecodeAckFreesPages))
	}
	if r.d.Lens(0).AwaitingAck != 0 {
		t.Errorf("%d rooms still wait for an ACK after prefill answered", r.d.Lens(0).AwaitingAck)
	}
	r.checkAnswer("B")
	r.checkClean()
}

// On Mooncake an ABORT no ACK answers is sent again after every resend
// rather than its pages freed (there is no name to retire that would
// refuse a stalled prefill's writes); the ACK that finally comes frees
// them.
func TestMooncakeUnackedAbortKeepsPages(t *testing.T) {
	t.Parallel()
	scriptMooncakeUnackedAbort(newRig(t, rigOpts{wire: contract.WireMooncake}))
}

func scriptMooncakeUnackedAbort(r *rig) {
	t := r.t
	r.add("A", 90, prompt(90, 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD("A")
	r.stepD()
	for i := range AbortResends + 3 {
		r.dropAborts()
		r.advance(testAckWait + 1)
		r.stepD()
		if r.d.Lens(0).AwaitingAck != 1 {
			t.Fatalf("after %d ACK timeouts the pages were freed without an ACK", i+1)
		}
	}
	p := r.d.Probes()
	if p.Count(contract.ProbeDecodeAckTimeoutFree) != 0 || p.Count(contract.ProbeDecodeUnfencedAckResent) == 0 {
		t.Errorf("ack-timeout-free %d, unfenced-ack-resent %d; want 0 and some", p.Count(contract.ProbeDecodeAckTimeoutFree), p.Count(contract.ProbeDecodeUnfencedAckResent))
	}
	r.settle()
	if r.d.Lens(0).AwaitingAck != 0 || p.Count(contract.ProbeDecodeAckFreesPages) != 1 {
		t.Errorf("awaiting %d, ack-frees-pages %d after the ACK; want 0, 1", r.d.Lens(0).AwaitingAck, p.Count(contract.ProbeDecodeAckFreesPages))
	}
	r.checkClean()
}

// A room whose aborted request's pages wait for prefill's ACK is still in
// use: a new request for it is refused until the ACK frees them, and for a
// waiting timeout after its release. Taken at once, a second abort of the
// room replaced the first's entry and its pages never came back, or
// prefill's Failed status for the first request failed the second and
// freed its pages under prefill's writes (both found by room-retries).
func TestRoomAwaitingAckIsInUse(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.abortInTransfer("a", 90)
	if r.d.Lens(0).AwaitingAck != 1 {
		t.Fatalf("awaiting %d ACKs after the abort in transfer, want 1", r.d.Lens(0).AwaitingAck)
	}
	err := r.d.Add(r.now, "b", 90, testBootstrap, model.Tokenize(prompt(91, 80)), 4)
	if err == nil || !strings.Contains(err.Error(), "room 90 already in use") {
		t.Fatalf("add of a room awaiting its ACK: %v, want room in use", err)
	}
	r.settle()
	if l := r.d.Lens(0); l.AwaitingAck != 0 || l.PagesUsed != 0 {
		t.Fatalf("after the ACK: awaiting %d, %d pages used; want 0, 0", l.AwaitingAck, l.PagesUsed)
	}
	// Released just now: prefill's Failed status for "a" may still be on
	// its way, and would fail "b" (notices name the room only).
	if err := r.d.Add(r.now, "b", 90, testBootstrap, model.Tokenize(prompt(91, 80)), 4); err == nil {
		t.Fatal("a room released just now was taken again")
	}
	r.advance(testTimeout)
	r.stepD()
	if err := r.d.Add(r.now, "b", 90, testBootstrap, model.Tokenize(prompt(91, 80)), 4); err != nil {
		t.Fatalf("add a waiting timeout after the room was released: %v", err)
	}
}
