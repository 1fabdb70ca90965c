package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// probeHits reads one probe's hits from base's /debug/probes.
func probeHits(ctx context.Context, base, name string) (int64, error) {
	got, err := testkit.Probes(ctx, base)
	if err != nil {
		return 0, err
	}
	for _, p := range got.Probes {
		if p.Name == name {
			return p.Hits, nil
		}
	}
	return 0, fmt.Errorf("%s reports no probe %s", base, name)
}

// writeHeld reports whether a transfer worker's write is held at its gate
// (WorkerSend said go: the write is in flight).
func writeHeld(ctx context.Context, h contract.Hooks) error {
	st, err := h.State(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		if s.Hook == contract.HookTransferWrites && s.Held > 0 {
			return nil
		}
	}
	return fmt.Errorf("no transfer write is held yet")
}

// TestLostPrefillWriteRefused: decode declares prefill lost (its bootstrap
// server stops answering the heartbeat) while a write of A is in flight,
// and frees A's pages at once; B is given them. When the write lands, it
// is addressed to the name decode retired with the lost epoch: refused,
// B's answer intact. Without the epoch it lands in B's pages (a foreign
// write, B's answer wrong), as harness/testdata/prefill-stop.yaml showed.
func TestLostPrefillWriteRefused(t *testing.T) {
	testkit.NoLeaks(t)
	cfg := contract.EngineConfig{TransferWorkers: 2, ChunkPages: 1, AckTimeout: 30 * time.Second,
		WaitingTimeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond}
	c := testcluster.Start(t, cfg)
	decode := c.EngineURLs()[1]
	h := hooksOf(t, c)
	writes := contract.HookSpec{Hook: contract.HookTransferWrites, Role: "prefill", Rank: -1, Worker: -1}
	must(t, h.Pause(t.Context(), writes))
	// Rooms on different workers (room % 2), prompts of one length, so B
	// is given exactly the pages A's loss freed.
	const roomA, roomB = uint64(7100), uint64(7101)
	textA, textB := longPrompt("alpha"), longPrompt("omega")
	testkit.Background(t, func(ctx context.Context) { _, _ = testkit.Generate(ctx, c.Endpoint(), "lost-a", roomA, textA, 8) })
	testkit.Eventually(t, 10*time.Second, func() error { return writeHeld(t.Context(), h) })

	// The bootstrap server stops answering: every heartbeat is refused.
	dead := testkit.Listen(t)
	deadAddr := dead.Addr().String()
	dead.Close()
	restore, err := c.Interpose(t.Context(), contract.LinkBootstrap, deadAddr)
	must(t, err)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n, err := probeHits(t.Context(), decode, "decode/prefill-lost"); err != nil || n < 1 {
			return fmt.Errorf("prefill not declared lost yet (%d, %v)", n, err)
		}
		if _, held, err := testkit.RoomOn(t.Context(), decode, roomA); err != nil || held {
			return fmt.Errorf("decode still holds A (%v)", err)
		}
		return nil
	})
	must(t, restore(t.Context()))

	answerB := make(chan string, 1)
	testkit.Background(t, func(ctx context.Context) {
		got, err := testkit.Generate(ctx, c.Endpoint(), "lost-b", roomB, textB, 8)
		if err != nil {
			got = "error: " + err.Error()
		}
		answerB <- got
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		rec, held, err := testkit.RoomOn(t.Context(), decode, roomB)
		if err != nil || !held || !hasEvent(rec, "metadata-sent") {
			return fmt.Errorf("B not preallocated yet")
		}
		return nil
	})
	must(t, h.Pause(t.Context(), decodeSched)) // B may receive but not commit
	must(t, h.Resume(t.Context(), contract.HookSpec{Hook: contract.HookTransferWrites, Role: "prefill", Rank: -1, Worker: int(roomB % 2)}))
	testkit.Eventually(t, 10*time.Second, func() error {
		rec, _, err := testkit.RoomOn(t.Context(), decode, roomB)
		if err != nil || rec.State != "Success" {
			return fmt.Errorf("B's KV not all received yet (%q)", rec.State)
		}
		return nil
	})
	// A's in-flight write lands now, under B's pages.
	must(t, h.Resume(t.Context(), writes))
	testkit.Eventually(t, 10*time.Second, func() error {
		v, err := testkit.Gauge(t.Context(), decode+contract.PathMetrics, contract.MetricStrayChunks)
		if err != nil || v < 1 {
			return fmt.Errorf("A's late write has not reached decode (%v, %v)", v, err)
		}
		return nil
	})
	must(t, h.Resume(t.Context(), decodeSched))
	var got string
	select {
	case got = <-answerB:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not finish")
	}
	foreign, err := testkit.Gauge(t.Context(), decode+contract.PathMetrics, contract.MetricForeignWrites)
	must(t, err)
	if foreign != 0 {
		t.Errorf("%s = %v: the lost prefill's write landed in pages decode had given to B", contract.MetricForeignWrites, foreign)
	}
	refused, err := probeHits(t.Context(), decode, "decode/chunk-lost-peer")
	must(t, err)
	if refused < 1 {
		t.Errorf("decode/chunk-lost-peer hit %d times, want A's late write refused", refused)
	}
	if want := model.Expected(textB, 8); got != want {
		t.Fatalf("B's answer corrupted\n got %q\nwant %q", got, want)
	}
}

// TestLostAbortResent: the control link drops a room's first ABORT. Decode
// does not free the room's pages on the ACK timeout: it sends the ABORT
// again, prefill acknowledges the resend, and the ACK frees the pages.
// Before the resend, the pages were freed on the timeout with a write of
// a slow prefill possibly still to land in them.
func TestLostAbortResent(t *testing.T) {
	testkit.NoLeaks(t)
	cfg := contract.EngineConfig{PrefillTokensPerSec: 200, AckTimeout: 500 * time.Millisecond, WaitingTimeout: time.Minute}
	c := testcluster.Start(t, cfg)
	decode := c.EngineURLs()[1]
	f := &protocol.Drop{Link: contract.ControlLink(0), Kinds: []protocol.Kind{protocol.KindAbort}, Limit: 1}
	heal, err := f.Inject(t.Context(), c)
	must(t, err)
	defer heal(context.Background())
	const room = uint64(7200)
	testkit.Background(t, func(ctx context.Context) {
		_, _ = testkit.Generate(ctx, c.Endpoint(), "resend-a", room, longPrompt("resend"), 4)
	})
	// Abort while decode waits for the KV: prefill forwards slowly.
	testkit.Eventually(t, 10*time.Second, func() error {
		rec, held, err := testkit.RoomOn(t.Context(), decode, room)
		if err != nil || !held || !hasEvent(rec, "metadata-sent") {
			return fmt.Errorf("room not in transfer yet")
		}
		return nil
	})
	abortOn(t, decode, "resend-a")
	// Every ACK timeout of the resends, and slack for a loaded machine.
	wait := time.Duration(core.AbortResends+1)*cfg.AckTimeout + 10*time.Second
	testkit.Eventually(t, wait, func() error {
		rec, _, err := testkit.RoomOn(t.Context(), decode, room)
		if err != nil || !hasEvent(rec, "abort-ack") {
			return fmt.Errorf("no ABORT_ACK on decode yet (%v): %+v", err, rec.Events)
		}
		return testkit.Drained(t.Context(), c)
	})
	rec, _, err := testkit.RoomOn(t.Context(), decode, room)
	must(t, err)
	if !hasEvent(rec, "abort-resent") || hasEvent(rec, "ack-timeout") {
		t.Errorf("want the ABORT resent and its ACK freeing the pages, not the ACK timeout: %+v", rec.Events)
	}
	if ev := f.Evidence(); ev.Counters["dropped"] != 1 {
		t.Errorf("dropped %d ABORTs, want the first only: %+v", ev.Counters["dropped"], ev.Counters)
	}
	if n, err := probeHits(t.Context(), decode, "decode/ack-frees-pages"); err != nil || n != 1 {
		t.Errorf("decode/ack-frees-pages hit %d times (%v), want 1", n, err)
	}
}
