package core

import (
	"errors"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Scripts: each plays one upstream interleaving through the driver. The
// same script runs against the fixed engine (must end clean) and with its
// regression switched on (must show the upstream wedge).

// abort-before-status (SGLang #30352): decode aborts in prealloc; its ABORT reaches prefill before
// prefill created the room.
func scriptAbortBeforeAdd(r *rig) {
	p := prompt(1, 80)
	r.addD("a", 11, p, 4)
	r.abortD("a")
	r.stepD() // abort applied in prealloc: ABORT, no metadata
	r.deliverControl()
	r.addP("a", 11, p)
	r.stepP()
}

// abort-before-status, second path (SGLang #34692): metadata, then ABORT, both before the sender exists.
func scriptMetaThenAbort(r *rig) {
	p := prompt(2, 120)
	r.addD("b", 12, p, 4)
	r.stepD() // metadata
	r.abortD("b")
	r.stepD() // ABORT
	r.deliverControl()
	r.addP("b", 12, p)
	r.stepP()
}

// status-resurrection (SGLang #24522): a worker holds the room's first chunk; ABORT fails the room;
// prefill retires and clears it; then the worker writes (an RDMA write
// completes whatever decode thinks of it).
func scriptResurrection(r *rig) {
	const room = 21
	r.add("r", room, prompt(21, 150), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(room)
	c := r.begin(0, w)
	r.abortD("r")
	r.stepD()
	r.deliverControl() // Failed; ACK waits for the held chunk
	r.stepP()          // retires and clears the failed room
	if r.send(0, w) {
		r.land(c)
		r.end(0, w, nil)
	}
}

// unknown-room-waiting (SGLang #35281): decode aborted; before its ABORT is read, decode refuses a
// chunk and the worker records a transfer error.
func scriptTransferErrorBeforeAbort(r *rig) {
	r.add("u", 31, prompt(31, 150), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD("u")
	r.stepD()      // ABORT queued, not delivered
	r.runWorkers() // decode refuses: WorkerEnd(err)
	r.deliverControl()
	r.stepP()
}

// bootstrap-thread-death (SGLang #30352): an unguarded ABORT reaches the bootstrap loop; a later request
// follows.
func scriptUnguardedAbort(r *rig) {
	r.add("x", 41, prompt(41, 80), 4)
	r.abortD("x")
	r.stepD()
	r.deliverControl()
	r.add("y", 42, prompt(42, 120), 5)
}

// decode-abort-leak (SGLang #25561): decode aborts a request in its transfer queue.
func scriptAbortInTransfer(r *rig) {
	r.add("l", 51, prompt(51, 120), 4)
	r.stepD() // metadata sent: transfer queue
	r.abortD("l")
}

// free-before-ack (SGLang #24580, #35049): A's chunk is in flight when decode aborts A;
// B reuses A's pages and completes its transfer; then A's write lands.
func scriptFreeBeforeAck(r *rig) {
	const roomA, roomB = 71, 82 // different workers
	r.add("A", roomA, prompt(71, 100), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(roomA)
	cA := r.begin(0, w)
	if !r.send(0, w) {
		r.t.Fatal("A's first chunk not sent")
	}
	r.abortD("A")
	r.stepD()
	r.add("B", roomB, prompt(72, 100), 6)
	r.stepD() // B preallocates
	r.deliverControl()
	r.stepP()
	r.runWorkers() // B's chunks; A's worker is busy
	r.land(cA)     // A's late write
	r.end(0, w, errRefused)
}

type wedgeCase struct {
	name   string
	reg    string
	ranks  int
	script func(*rig)
	mid    func(*testing.T, *rig) // with the regression, right after the script
	wedge  func(*testing.T, *rig) // with the regression, after finish
	fixed  func(*testing.T, *rig) // fixed engine, after finish and checkClean
}

func stuckBootstrapping(room uint64) func(*testing.T, *rig) {
	return func(t *testing.T, r *rig) {
		if b, _, _ := r.p.QueueLens(); b != 1 {
			t.Errorf("bootstrap queue %d, want 1 stuck request", b)
		}
		if s := r.p.ranks[0].status.Check(room); s != Bootstrapping {
			t.Errorf("room %d is %s, want stuck Bootstrapping", room, s)
		}
	}
}

func wedgeCases() []wedgeCase {
	return []wedgeCase{
		{name: "abort-before-status/abort-first", reg: contract.AbortBeforeStatus, script: scriptAbortBeforeAdd,
			wedge: stuckBootstrapping(11)},
		{name: "abort-before-status/metadata-then-abort", reg: contract.AbortBeforeStatus, script: scriptMetaThenAbort,
			wedge: stuckBootstrapping(12)},
		{name: "status-resurrection", reg: contract.StatusResurrection, script: scriptResurrection,
			mid: func(t *testing.T, r *rig) {
				if s := r.p.ranks[0].status.Check(21); !r.p.ranks[0].status.Has(21) || s != Transferring || r.p.byRoom[21] != nil {
					t.Errorf("room 21 is %s (owned=%v), want re-inserted Transferring with no owner", s, r.p.byRoom[21] != nil)
				}
			},
			wedge: func(t *testing.T, r *rig) {
				held, _ := heldRooms(r.ph)
				if len(held) != 1 || held[0].Room != 21 {
					t.Fatalf("prefill held rooms %+v, want room 21 resurrected", held)
				}
				t.Logf("room 21 resurrected and held as %s", held[0].State)
			}},
		{name: "unknown-room-waiting", reg: contract.UnknownRoomWaiting, script: scriptTransferErrorBeforeAbort,
			wedge: func(t *testing.T, r *rig) {
				if _, _, i := r.p.QueueLens(); i != 1 {
					t.Errorf("inflight queue %d, want 1 pinned", i)
				}
				if s := r.p.poll(31); s != WaitingForInput {
					t.Errorf("absent room polls %s, want WaitingForInput", s)
				}
				// The room its sender still polls is held, as what it reads,
				// so rooms-terminal sees the wedge and not only the gauge.
				if held, _ := heldRooms(r.ph); len(held) != 1 || held[0].Room != 31 || held[0].State != contract.StateWaitingForInput {
					t.Errorf("prefill held rooms %+v, want room 31 held WaitingForInput", held)
				}
			}},
		{name: "bootstrap-thread-death", reg: contract.BootstrapThreadDeath, script: scriptUnguardedAbort,
			wedge: func(t *testing.T, r *rig) {
				if len(r.ctlErrs) == 0 || !errors.Is(r.ctlErrs[0], ErrLoopDead) || !r.p.Dead(0) {
					t.Errorf("OnControl errors %v dead=%v, want ErrLoopDead", r.ctlErrs, r.p.Dead(0))
				}
				if b, _, _ := r.p.QueueLens(); b != 2 || r.p.poll(42) != Bootstrapping {
					t.Errorf("bootstrap queue %d, later room %s: want both parked Bootstrapping", b, r.p.poll(42))
				}
			},
			fixed: func(t *testing.T, r *rig) { r.checkAnswer("y") }},
		{name: "decode-abort-leak", reg: contract.DecodeAbortLeak, script: scriptAbortInTransfer,
			wedge: func(t *testing.T, r *rig) {
				if l := r.d.Lens(0); l.Transfer != 1 {
					t.Errorf("decode lens %+v, want transfer stuck at 1", l)
				}
			}},
		{name: "rank-desync", reg: contract.RankDesync, ranks: 2, script: scriptAbortInTransfer,
			wedge: func(t *testing.T, r *rig) {
				if !r.d.Hung() || r.hangs == 0 {
					t.Errorf("decode not hung")
				}
				if _, err := r.d.Step(r.now); !errors.Is(err, ErrCollectiveHang) {
					t.Errorf("Step = %v, want ErrCollectiveHang", err)
				}
			}},
		{name: "free-before-ack", reg: contract.FreeBeforeAck, script: scriptFreeBeforeAck,
			wedge: func(t *testing.T, r *rig) {
				if r.done["B"] != 1 {
					t.Fatalf("B did not complete: %v", r.dfin["B"])
				}
				if got := r.answer["B"].String(); got == model.Expected(r.rids["B"], 6) {
					t.Errorf("B's answer is correct; want corruption from A's late write")
				}
			},
			fixed: func(t *testing.T, r *rig) { r.checkAnswer("B") }},
	}
}

func TestRegressionWedges(t *testing.T) {
	t.Parallel()
	for _, w := range contract.Wires() {
		for _, tc := range wedgeCases() {
			t.Run(string(w)+"/"+tc.name+"/regressed", func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigOpts{reg: contract.Regressions{tc.reg: true}, ranks: tc.ranks, wire: w})
				tc.script(r)
				if tc.mid != nil {
					tc.mid(t, r)
				}
				r.finish()
				tc.wedge(t, r)
			})
			t.Run(string(w)+"/"+tc.name+"/fixed", func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigOpts{ranks: tc.ranks, wire: w})
				tc.script(r)
				r.finish()
				r.checkClean()
				if tc.fixed != nil {
					tc.fixed(t, r)
				}
			})
		}
	}
}

// With bootstrap-thread-death every malformed frame kills the loop; later
// requests park.
func TestMalformedKillsLoopWhenRegressed(t *testing.T) {
	t.Parallel()
	for _, w := range contract.Wires() {
		for _, tc := range malformedFrames(w) {
			t.Run(string(w)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigOpts{wire: w, reg: contract.Regressions{contract.BootstrapThreadDeath: true}})
				if err := r.p.OnControl(r.now, 0, tc.frames); !errors.Is(err, ErrLoopDead) {
					t.Fatalf("OnControl = %v, want ErrLoopDead", err)
				}
				r.add("after", 77, prompt(77, 90), 5)
				r.finish()
				if b, _, _ := r.p.QueueLens(); b != 1 || len(r.pfin["after"]) != 0 {
					t.Errorf("bootstrap queue %d, finishes %v: want the request parked", b, r.pfin["after"])
				}
			})
		}
	}
}

type framesCase struct {
	name   string
	frames [][]byte
}

// malformedFrames are control messages prefill must refuse, per dialect.
func malformedFrames(w contract.Wire) []framesCase {
	wire := dialectOf(w)
	b := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	meta := func(edit func([][]byte) [][]byte) [][]byte {
		m := Metadata{Room: 5, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: wire.AgentName("decode-agent-0", "10.0.0.2:9200"), Pages: []uint32{1, 2}, RequiredDst: 1}
		return edit(wire.Metadata(m))
	}
	reg := func(edit func([][]byte) [][]byte) [][]byte {
		g := Registration{DecodeIP: "10.0.0.2", DecodePort: 9101, AgentName: "other", KVAddr: "10.0.0.2:1", DecodeTP: 1, DstNumSlots: 8}
		return edit(wire.Registration(g))
	}
	set := func(i int, v string) func([][]byte) [][]byte {
		return func(f [][]byte) [][]byte { f[i] = []byte(v); return f }
	}
	cut := func(n int) func([][]byte) [][]byte { return func(f [][]byte) [][]byte { return f[:n] } }
	shared := []framesCase{
		{"abort-bad-room", b(TagAbort, "room", "10.0.0.2", "9100")},
		{"abort-bad-port", b(TagAbort, "5", "10.0.0.2", "port")},
		{"abort-3-frames", b(TagAbort, "5", "10.0.0.2")},
		{"empty-message", [][]byte{}},
		{"one-empty-frame", [][]byte{{}}},
		{"no-guard", b("hello", "world")},
		{"guard-only", b(Guard)},
	}
	if wire.Wire() == contract.WireMooncake {
		return append(shared, []framesCase{
			{"metadata-bad-room", meta(set(0, "12x"))},
			{"metadata-bad-aux", meta(set(5, "x"))},
			{"metadata-7-frames", meta(cut(7))},
			{"metadata-odd-pages", meta(set(4, "\x01\x02\x03"))},
			{"metadata-unknown-session", meta(set(3, "10.9.9.9:1"))},
			{"registration-bad-port", reg(set(2, "p"))},
			{"registration-bad-session", reg(set(3, "x"))},
			{"registration-9-frames", reg(cut(9))},
			{"status-sent-to-prefill", b("5", "0", "0")},
			{"watermark", b("WATERMARK", "1", "2", "session")},
		}...)
	}
	return append(shared, []framesCase{
		{"metadata-bad-room", meta(set(1, "12x"))},
		{"metadata-bad-aux", meta(set(6, ""))},
		{"metadata-7-frames", meta(cut(7))},
		{"metadata-odd-pages", meta(set(5, "\x01\x02\x03"))},
		{"metadata-unknown-agent", meta(set(4, "nobody"))},
		{"registration-bad-port", reg(set(3, "p"))},
		{"registration-bad-tp", reg(set(10, "x"))},
		{"registration-12-frames-with-state", reg(cut(12))},
		{"registration-5-frames", reg(cut(5))},
		{"mooncake-registration", dialectOf(contract.WireMooncake).Registration(Registration{DecodeIP: "10.0.0.2", DecodePort: 1, KVAddr: "10.0.0.2:1", AgentName: "10.0.0.2:1"})},
	}...)
}

// A room fails on one TP rank while the other rank's write is still in
// flight: prefill's rank 0 write fails, rank 1's chunk is on the wire.
// Prefill tells decode rank 0 failed at once and rank 1 only once its
// write drained; decode fails the room on the first, but rank 1's pages
// must wait for the second, or a request taking them would find them
// overwritten by the late write.
func scriptPartialFailure(r *rig) {
	r.add("t", 61, prompt(61, 200), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	busy := func(rank int) (int, *Chunk) {
		for w := range r.p.Workers() {
			if c := r.begin(rank, w); c != nil && r.send(rank, w) {
				return w, c
			}
		}
		r.t.Fatalf("no rank %d worker holds a chunk to write", rank)
		return 0, nil
	}
	w1, late := busy(1)
	w0, _ := busy(0)
	r.end(0, w0, errors.New("write kv chunk: connection reset"))
	r.stepP()
	r.deliverNotices() // rank 0's Failed
	r.stepD()
	if used := r.d.Lens(1).PagesUsed; used == 0 {
		r.t.Errorf("decode freed rank 1's pages while prefill rank 1 still writes them")
	}
	r.add("u", 62, prompt(62, 200), 4) // takes pages, perhaps the freed ones
	r.stepD()
	r.land(late)
	r.end(1, w1, errRefused)
	r.stepP()
	r.deliverNotices() // rank 1's Failed, after its write drained
	r.stepD()
	if r.d.ForeignWrites != 0 {
		r.t.Errorf("%d late writes landed in another request's pages", r.d.ForeignWrites)
	}
	if l := r.d.Lens(1); l.AwaitingAck != 0 {
		r.t.Errorf("rank 1's pages still held after its Failed status: %+v", l)
	}
}

// tombstonedRoom leaves room 11 tombstoned on prefill ("a": ABORT first,
// a tombstone, "a" failed on it) and forgotten by decode, and returns the
// prompt a client retrying in it sends.
func tombstonedRoom(r *rig) string {
	scriptAbortBeforeAdd(r)
	r.settle()
	r.advance(testTimeout + time.Second) // decode forgets the released room
	r.settle()
	return prompt(1, 80)
}

// A client that retries in the room its aborted request used meets the
// tombstone: prefill fails the retry at once. Decode still sends the retry's
// metadata and waits for a verdict; prefill must answer it Failed, not take
// it for the aborted request's and drop it, which left decode to its
// waiting timeout.
func TestRetryInTombstonedRoomIsAnswered(t *testing.T) {
	r := newRig(t, rigOpts{})
	p := tombstonedRoom(r)
	r.addP("a2", 11, p) // the retry, on prefill first: failed at once
	r.stepP()
	if got := r.pfin["a2"]; len(got) != 1 || got[0] == nil {
		t.Fatalf("prefill finished the retry %v, want one failure on the tombstone", got)
	}
	r.addD("a2", 11, p, 4)
	r.stepD() // the retry's metadata
	if n := r.deliverControl(); n == 0 {
		t.Fatal("decode sent no metadata for the retry")
	}
	if n := r.deliverNotices(); n == 0 {
		t.Fatal("prefill sent decode nothing for the retry's metadata, want a Failed status")
	}
	r.stepD()
	if got := r.dfin["a2"]; len(got) != 1 || !errors.Is(got[0], ErrDecodeFailed) {
		t.Errorf("decode finished the retry %v, want one ErrDecodeFailed at once, before any deadline", got)
	}
	r.finish()
}

// The same retry with its metadata ahead of its request on prefill (decode
// is quicker): the metadata meets only the tombstone, so prefill cannot
// tell it from the aborted request's late metadata. It answers it Failed
// at once, as upstream answers a TransferInfo that meets a tombstone: the
// retry is failed on the tombstone when it arrives anyway, and decode must
// not wait out its deadline for it.
func TestRetryMetadataAheadOfItsRequestIsAnswered(t *testing.T) {
	r := newRig(t, rigOpts{})
	p := tombstonedRoom(r)
	r.addD("a2", 11, p, 4)
	r.stepD() // the retry's metadata, before its request reaches prefill
	if n := r.deliverControl(); n == 0 {
		t.Fatal("decode sent no metadata for the retry")
	}
	if n := r.deliverNotices(); n == 0 {
		t.Fatal("prefill sent decode nothing for metadata in a tombstoned room, want a Failed status")
	}
	r.addP("a2", 11, p) // the retry's request: failed on the tombstone
	r.stepP()
	if got := r.pfin["a2"]; len(got) != 1 || got[0] == nil {
		t.Fatalf("prefill finished the retry %v, want one failure on the tombstone", got)
	}
	r.stepD()
	if got := r.dfin["a2"]; len(got) != 1 || !errors.Is(got[0], ErrDecodeFailed) {
		t.Errorf("decode finished the retry %v, want one ErrDecodeFailed at once, before any deadline", got)
	}
	r.finish()
}
