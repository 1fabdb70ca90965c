package core

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// A full fixed-engine run produces exactly model.Expected: decode generates
// from the bytes it holds in its pages, for TP=1 and TP=2 (KV split across
// ranks), one request at a time and many at once.
func TestFullRunMatchesModel(t *testing.T) {
	t.Parallel()
	prompts := map[string]string{
		"empty":     "",
		"one-chunk": prompt(1, 20),
		"50":        prompt(2, 50),
		"123":       prompt(3, 123),
		"300":       prompt(4, 300),
	}
	for _, ranks := range []int{1, 2} {
		for name, text := range prompts {
			t.Run(fmt.Sprintf("tp%d/%s", ranks, name), func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigOpts{ranks: ranks})
				r.add("req", 1000+uint64(len(text)), text, 12)
				r.settle()
				r.checkAnswer("req")
				if r.pfin["req"][0] != nil {
					t.Errorf("prefill finish %v, want success", r.pfin["req"][0])
				}
				r.checkClean()
			})
		}
		t.Run(fmt.Sprintf("tp%d/concurrent", ranks), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ranks: ranks})
			for i := range 8 {
				r.add(fmt.Sprintf("r%d", i), uint64(500+i), prompt(10+i, 50+35*i), 3+i)
			}
			r.settle()
			for i := range 8 {
				r.checkAnswer(fmt.Sprintf("r%d", i))
			}
			r.checkClean()
		})
	}
}

// The answer depends on every KV byte: a prompt differing in one word, or
// the same words in another order, gives another answer.
func TestAnswerDependsOnKV(t *testing.T) {
	t.Parallel()
	a := prompt(5, 100)
	b := prompt(5, 99) + " other"
	if model.Expected(a, 8) == model.Expected(b, 8) {
		t.Fatal("different prompts, same answer")
	}
}

// 2a. ABORT arrives before prefill created the room: the sender sees it.
func TestAbortBeforeRoomExists(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	scriptAbortBeforeAdd(r)
	if got := r.pfin["a"]; len(got) != 1 || !errors.Is(got[0], ErrBootstrapFailed) {
		t.Fatalf("prefill finish %v after one step, want bootstrap failed", got)
	}
	if r.p.BootstrapFailed != 1 {
		t.Errorf("BootstrapFailed=%d, want 1", r.p.BootstrapFailed)
	}
	r.finish()
	if got := r.dfin["a"]; len(got) != 1 || !errors.Is(got[0], ErrAborted) {
		t.Errorf("decode finish %v, want aborted", got)
	}
	r.checkClean()
}

// 2b. Metadata then ABORT, both before the sender: Failed, not Bootstrapping.
func TestMetadataThenAbortBeforeSender(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	scriptMetaThenAbort(r)
	if got := r.pfin["b"]; len(got) != 1 || !errors.Is(got[0], ErrBootstrapFailed) {
		t.Fatalf("prefill finish %v after one step, want bootstrap failed", got)
	}
	r.finish()
	r.checkClean()
}

// 2c. ABORT lands while a worker holds a chunk before WorkerSend: the chunk
// is not sent, the ACK waits for the release, decode frees only after it.
func TestAbortInPauseWindow(t *testing.T) {
	t.Parallel()
	for _, ranks := range []int{1, 2} {
		t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ranks: ranks})
			const room = 13
			r.add("c", room, prompt(3, 150), 4)
			r.stepD()
			r.deliverControl()
			r.stepP()
			w := workerOf(room)
			if c := r.begin(0, w); c == nil || c.Room != room {
				t.Fatalf("worker 0/%d began %+v", w, c)
			}
			r.abortD("c")
			r.stepD()
			r.deliverControl()
			if n := len(r.notices); n != ranks-1 { // rank 0 holds; other ranks ack at once
				t.Fatalf("%d notices before the held chunk is released, want %d: %v", n, ranks-1, r.notices)
			}
			r.deliverNotices()
			r.stepD()
			if l := r.d.Lens(0); l.PagesUsed == 0 || l.AwaitingAck != 1 {
				t.Fatalf("decode freed pages before prefill's ACK: %+v", l)
			}
			if r.send(0, w) {
				t.Fatal("WorkerSend wrote a chunk of an aborted room")
			}
			if n := len(r.notices); n != 1 {
				t.Fatalf("%d notices after release, want the ACK", n)
			}
			r.deliverNotices()
			if l := r.d.Lens(0); l.PagesUsed != 0 || l.AwaitingAck != 0 {
				t.Fatalf("decode kept pages after ACK: %+v", l)
			}
			if r.d.StrayChunks != 0 {
				t.Errorf("StrayChunks=%d, want 0", r.d.StrayChunks)
			}
			r.finish()
			if got := r.pfin["c"]; len(got) != 1 || !errors.Is(got[0], ErrTransferFailed) {
				t.Errorf("prefill finish %v, want transfer failed", got)
			}
			r.checkClean()
		})
	}
}

// 2d. A worker's chunk for a room prefill already cleared never re-inserts it.
func TestChunkForClearedRoom(t *testing.T) {
	t.Parallel()
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		const room = 14
		r.add("d", room, prompt(4, 120), 4)
		r.stepD()
		r.deliverControl()
		r.stepP()
		r.abortP("d")
		r.stepP() // clears the room; its chunks are still queued
		if r.p.ranks[0].status.Has(room) {
			t.Fatal("room not cleared")
		}
		if n := r.runWorkers(); n != 0 {
			t.Errorf("workers began %d chunks of a cleared room", n)
		}
		if r.p.ranks[0].status.Has(room) {
			t.Fatal("worker re-inserted a cleared room")
		}
		r.finish()
		r.checkClean()
	})
	t.Run("last-chunk-in-flight", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		const room = 15
		r.add("d", room, prompt(4, 120), 4)
		r.stepD()
		r.deliverControl()
		r.stepP()
		w := workerOf(room)
		var c *Chunk
		for {
			c = r.begin(0, w)
			if !r.send(0, w) {
				t.Fatal("send refused")
			}
			if c.Last {
				break
			}
			r.land(c)
			r.end(0, w, nil)
		}
		r.abortP("d")
		r.stepP() // clears the room while its last chunk is in flight
		r.land(c)
		r.end(0, w, nil) // Success write for a cleared room
		if r.p.ranks[0].status.Has(room) {
			t.Fatalf("late worker write re-inserted room as %s", r.p.ranks[0].status.Check(room))
		}
		r.finish()
		r.checkClean()
	})
}

// 2e. Bad frames are counted and dropped; the loop keeps serving.
func TestMalformedControlCounted(t *testing.T) {
	t.Parallel()
	for _, w := range contract.Wires() {
		for _, tc := range malformedFrames(w) {
			t.Run(string(w)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigOpts{wire: w})
				if err := r.p.OnControl(r.now, 0, tc.frames); err != nil {
					t.Fatalf("OnControl: %v", err)
				}
				if r.p.Malformed != 1 {
					t.Errorf("Malformed=%d, want 1", r.p.Malformed)
				}
				r.add("after", 77, prompt(77, 90), 5)
				r.settle()
				r.checkAnswer("after")
				r.checkClean()
			})
		}
	}
}

// A malformed notice is an error for the caller, counted, not a wedge.
func TestMalformedNotice(t *testing.T) {
	t.Parallel()
	b := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	bad := map[contract.Wire][][][]byte{
		contract.WireNIXL: {nil, b(TagAbortAck, "x", "0"), b(TagAbortAck), b(TagKVStatus, "1", "s", "0", "why"),
			b(TagKVStatus, "1", "0"), b("1", "0", "0"), b(TagKVStatus, "1", "9", "0", "why")},
		contract.WireMooncake: {nil, b(TagAbortAck, "x", "0"), b("1", "s", "0"), b(TagKVStatus, "1", "0", "0", "why"),
			b("1", "0"), b("AUX_DATA", "1", "0", "0", "\x00\x00\x00\x01", "x"), b("1", "0", "x")},
	}
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{wire: w})
			for _, f := range bad[w] {
				if err := r.d.OnNotice(r.now, 0, f); !errors.Is(err, ErrMalformed) {
					t.Errorf("OnNotice(%q) = %v, want ErrMalformed", f, err)
				}
			}
			if r.d.Malformed != int64(len(bad[w])) {
				t.Errorf("decode Malformed=%d, want %d", r.d.Malformed, len(bad[w]))
			}
			r.add("after", 78, prompt(78, 60), 3)
			r.settle()
			r.checkAnswer("after")
			r.checkClean()
		})
	}
}

// 2f. A decode abort removes the request from every rank's queues.
func TestDecodeAbortLeavesQueues(t *testing.T) {
	t.Parallel()
	for _, ranks := range []int{1, 2} {
		t.Run(fmt.Sprintf("prealloc/tp%d", ranks), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ranks: ranks, decodePages: 16})
			r.add("big", 91, prompt(91, 200), 4) // 13 of 16 pages
			r.add("x", 92, prompt(92, 100), 4)   // 7 pages: waits in prealloc
			r.stepD()
			for rank := range ranks {
				if l := r.d.Lens(rank); l.Prealloc != 1 || l.Transfer != 1 {
					t.Fatalf("rank %d lens %+v, want 1 prealloc 1 transfer", rank, l)
				}
			}
			r.abortD("x")
			r.stepD()
			for rank := range ranks {
				if l := r.d.Lens(rank); l.Prealloc != 0 || l.Transfer != 1 {
					t.Fatalf("rank %d after abort lens %+v, want 0 prealloc", rank, l)
				}
			}
			r.finish()
			r.checkAnswer("big")
			r.checkClean()
		})
		t.Run(fmt.Sprintf("transfer/tp%d", ranks), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ranks: ranks})
			r.add("x", 93, prompt(93, 100), 4)
			r.stepD()
			r.abortD("x")
			r.stepD()
			for rank := range ranks {
				if l := r.d.Lens(rank); l.Transfer != 0 || l.AwaitingAck != 1 || l.PagesUsed == 0 {
					t.Fatalf("rank %d after abort lens %+v, want 0 transfer, pages awaiting ACK", rank, l)
				}
			}
			r.finish()
			r.checkClean()
		})
	}
}

// 2g. Deadlines: nothing waits forever in the fixed engine.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	t.Run("bootstrap", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		r.add("g", 101, prompt(101, 80), 4)
		r.stepD()
		r.ctl = nil // metadata lost
		r.stepP()
		r.advance(testTimeout)
		r.stepP()
		if len(r.pfin["g"]) != 0 {
			t.Fatal("failed before the bootstrap timeout")
		}
		r.advance(1)
		r.stepP()
		if got := r.pfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrBootstrapFailed) {
			t.Fatalf("prefill finish %v, want bootstrap failed", got)
		}
		r.finish()
		if got := r.dfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrWaitingTimout) {
			t.Errorf("decode finish %v, want waiting timeout", got)
		}
		r.checkClean()
	})
	t.Run("inflight", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		r.add("g", 102, prompt(102, 80), 4)
		r.stepD()
		r.deliverControl()
		r.stepP()
		r.advance(testTimeout + 1) // workers never ran
		r.stepP()
		if got := r.pfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrTransferFailed) {
			t.Fatalf("prefill finish %v, want transfer failed", got)
		}
		r.deliverNotices() // prefill's Failed status beats decode's own timeout
		r.stepD()
		if got := r.dfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrDecodeFailed) {
			t.Errorf("decode finish %v, want transfer failed", got)
		}
		r.finish()
		r.checkClean()
	})
	t.Run("decode-waiting", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		r.addD("g", 103, prompt(103, 80), 4) // prefill never gets it
		r.settle()
		r.advance(testTimeout + 1)
		r.stepD()
		if got := r.dfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrWaitingTimout) {
			t.Fatalf("decode finish %v, want waiting timeout", got)
		}
		r.finish()
		r.checkClean()
	})
}
