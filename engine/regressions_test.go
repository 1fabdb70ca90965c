package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// Each known regression is driven into its wedge on the in-process cluster,
// with real sockets, by a forced ordering (engine hooks, a hold proxy,
// one-sided aborts), and observed the way an operator would: /metrics,
// /debug/rooms and /health. The same script on the fixed engine drains.

// shortDeadlines makes the fixed engine's backstops fire quickly, so
// "the regression never heals" can be shown by watching longer than them.
func shortDeadlines(cfg contract.EngineConfig) contract.EngineConfig {
	cfg.BootstrapTimeout, cfg.InflightTimeout, cfg.WaitingTimeout = time.Second, time.Second, time.Second
	if cfg.AckTimeout == 0 {
		cfg.AckTimeout = time.Second
	}
	return cfg
}

const wedgeWindow = 3 * time.Second // longer than every deadline above

type wedgeScript func(t *testing.T, c *engine.Cluster, regressed bool)

func runWedge(t *testing.T, name string, cfg contract.EngineConfig, script wedgeScript) {
	for _, regressed := range []bool{true, false} {
		label := "fixed"
		cfg := shortDeadlines(cfg)
		if regressed {
			label = "regressed"
			cfg.Regressions = []string{name}
		}
		t.Run(label, func(t *testing.T) {
			testkit.NoLeaks(t)
			c := testcluster.Start(t, cfg)
			script(t, c, regressed)
		})
	}
}

func longPrompt(tag string) string {
	return strings.Repeat(tag+" edits the parser and reruns the failing test suite ", 20)
}

// wedged asserts cond holds for the whole window while /health stays 200.
func wedged(t *testing.T, c *engine.Cluster, cond func() error) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, cond)
	testkit.Consistently(t, wedgeWindow, func() error {
		if err := healthy(t.Context(), c); err != nil {
			return err
		}
		return cond()
	})
}

func TestRegressionAbortBeforeStatus(t *testing.T) {
	runWedge(t, contract.AbortBeforeStatus, contract.EngineConfig{}, func(t *testing.T, c *engine.Cluster, regressed bool) {
		prefill, decode := c.EngineURLs()[0], c.EngineURLs()[1]
		// Prefill's copy of the request arrives late: decode's metadata and
		// then its ABORT reach prefill before the sender exists (SGLang #34692).
		hold := newHoldProxy(t, c.Prefill.Addrs().HTTP)
		restore, err := c.Interpose(t.Context(), "router-prefill", hold.Addr())
		must(t, err)
		defer restore(context.Background())
		const room, rid = uint64(1001), "abs-1"
		testkit.Background(t, func(ctx context.Context) { _, _ = testkit.Generate(ctx, c.Endpoint(), rid, room, longPrompt("a"), 8) })
		testkit.Eventually(t, 10*time.Second, func() error {
			rec, held, err := testkit.RoomOn(t.Context(), prefill, room)
			if err != nil || !held {
				return fmt.Errorf("metadata not yet at prefill: %v", err)
			}
			_ = rec
			return nil
		})
		abortOn(t, decode, rid)
		testkit.Eventually(t, 10*time.Second, func() error {
			rec, _, err := testkit.RoomOn(t.Context(), prefill, room)
			if err != nil || !hasEvent(rec, "abort-received") {
				return fmt.Errorf("ABORT not yet applied at prefill (state %q): %v", rec.State, err)
			}
			return nil
		})
		hold.Release()
		if !regressed {
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			return
		}
		wedged(t, c, func() error {
			if err := testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillBootstrapQueue, 1); err != nil {
				return err
			}
			rec, held, err := testkit.RoomOn(t.Context(), prefill, room)
			if err != nil || !held || rec.State != "Bootstrapping" {
				return fmt.Errorf("want room %d held Bootstrapping, got held=%v state=%q err=%v", room, held, rec.State, err)
			}
			return nil
		})
	})
}

func TestRegressionStatusResurrection(t *testing.T) {
	runWedge(t, contract.StatusResurrection, contract.EngineConfig{}, func(t *testing.T, c *engine.Cluster, regressed bool) {
		prefill := c.EngineURLs()[0]
		h := hooksOf(t, c)
		must(t, h.Pause(t.Context(), allWorkers))
		const room = uint64(2002)
		cancel := testkit.Background(t, func(ctx context.Context) {
			_, _ = testkit.Generate(ctx, c.Endpoint(), "sr-1", room, longPrompt("s"), 8)
		})
		testkit.Eventually(t, 10*time.Second, func() error { _, err := heldWorker(t.Context(), h); return err })
		cancel() // the client leaves while a worker holds the room's chunk
		testkit.Eventually(t, 10*time.Second, func() error {
			if _, held, err := testkit.RoomOn(t.Context(), prefill, room); err != nil || held {
				return fmt.Errorf("prefill has not retired the aborted room yet (held=%v, %v)", held, err)
			}
			return nil
		})
		must(t, h.Resume(t.Context(), allWorkers))
		if !regressed {
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			rec, _, err := testkit.RoomOn(t.Context(), prefill, room)
			must(t, err)
			cleared := false
			for _, e := range rec.Events {
				cleared = cleared || e.Kind == "clear"
				if cleared && e.Kind == "status" {
					t.Errorf("fixed engine: status written after the room was cleared: %+v", e)
				}
			}
			return
		}
		wedged(t, c, func() error {
			rec, held, err := testkit.RoomOn(t.Context(), prefill, room)
			if err != nil || !held {
				return fmt.Errorf("want room %d revived after its clear and held for good (held=%v, %v)", room, held, err)
			}
			_ = rec
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillInflightQueue, 0)
		})
	})
}

func hasEvent(rec contract.RoomRecord, kind string) bool {
	for _, e := range rec.Events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func TestRegressionUnknownRoomWaiting(t *testing.T) {
	runWedge(t, contract.UnknownRoomWaiting, contract.EngineConfig{}, func(t *testing.T, c *engine.Cluster, regressed bool) {
		decode := c.EngineURLs()[1]
		h := hooksOf(t, c)
		must(t, h.Pause(t.Context(), allWorkers))
		const room, rid = uint64(3003), "urw-1"
		testkit.Background(t, func(ctx context.Context) { _, _ = testkit.Generate(ctx, c.Endpoint(), rid, room, longPrompt("u"), 8) })
		testkit.Eventually(t, 10*time.Second, func() error { _, err := heldWorker(t.Context(), h); return err })
		// Decode gives the room up; its ABORT waits at prefill's stalled
		// bootstrap loop, so the worker's refused write comes first (6.3).
		must(t, h.Pause(t.Context(), bootstrapLoop))
		abortOn(t, decode, rid)
		testkit.Eventually(t, 10*time.Second, func() error {
			if _, held, err := testkit.RoomOn(t.Context(), decode, room); err != nil || held {
				return fmt.Errorf("decode has not dropped the room yet")
			}
			return nil
		})
		must(t, h.Resume(t.Context(), allWorkers))
		testkit.Eventually(t, 10*time.Second, func() error {
			v, err := testkit.Gauge(t.Context(), decode+contract.PathMetrics, contract.MetricStrayChunks)
			if err != nil || v < 1 {
				return fmt.Errorf("refused write not yet seen by decode (%v, %v)", v, err)
			}
			return nil
		})
		must(t, h.Resume(t.Context(), bootstrapLoop))
		if !regressed {
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			return
		}
		wedged(t, c, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillInflightQueue, 1)
		})
	})
}

func TestRegressionBootstrapThreadDeath(t *testing.T) {
	runWedge(t, contract.BootstrapThreadDeath, contract.EngineConfig{}, func(t *testing.T, c *engine.Cluster, regressed bool) {
		decode := c.EngineURLs()[1]
		h := hooksOf(t, c)
		must(t, h.Pause(t.Context(), allWorkers))
		testkit.Background(t, func(ctx context.Context) {
			_, _ = testkit.Generate(ctx, c.Endpoint(), "btd-1", 4004, longPrompt("b"), 8)
		})
		testkit.Eventually(t, 10*time.Second, func() error { _, err := heldWorker(t.Context(), h); return err })
		abortOn(t, decode, "btd-1") // decode's unguarded ABORT reaches the bootstrap loop
		alive := 1.0
		if regressed {
			alive = 0
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricBootstrapLoopAlive, alive)
		})
		must(t, h.Resume(t.Context(), allWorkers))
		msgs := prompt(7)
		answer := make(chan error, 1)
		testkit.Background(t, func(ctx context.Context) {
			answer <- testkit.ChatExact(ctx, c.Endpoint(), msgs, 8)
		})
		if !regressed {
			select {
			case err := <-answer:
				must(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("fixed engine: a new request did not complete")
			}
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			return
		}
		wedged(t, c, func() error {
			if err := testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillBootstrapQueue, 1); err != nil {
				return err
			}
			select {
			case err := <-answer:
				return fmt.Errorf("the request after the loop died ended: %v", err)
			default:
				return nil
			}
		})
	})
}

func TestRegressionDecodeAbortLeak(t *testing.T) {
	runWedge(t, contract.DecodeAbortLeak, contract.EngineConfig{}, func(t *testing.T, c *engine.Cluster, regressed bool) {
		h := hooksOf(t, c)
		must(t, h.Pause(t.Context(), allWorkers))
		cancel := testkit.Background(t, func(ctx context.Context) {
			_, _ = testkit.Generate(ctx, c.Endpoint(), "dal-1", 5005, longPrompt("d"), 8)
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 1)
		})
		cancel() // client leaves while decode waits for KV
		testkit.Eventually(t, 10*time.Second, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillInflightQueue, 0)
		})
		must(t, h.Resume(t.Context(), allWorkers))
		if !regressed {
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			return
		}
		wedged(t, c, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 1)
		})
	})
}

func TestRegressionRankDesync(t *testing.T) {
	// A long heartbeat: under load a missed /health would fail the rooms
	// (peer loss) and unpin the queue this test watches stay pinned.
	cfg := contract.EngineConfig{TP: 2, HeartbeatInterval: time.Minute}
	runWedge(t, contract.RankDesync, cfg, func(t *testing.T, c *engine.Cluster, regressed bool) {
		h := hooksOf(t, c)
		must(t, h.Pause(t.Context(), allWorkers))
		cancel := testkit.Background(t, func(ctx context.Context) {
			_, _ = testkit.Generate(ctx, c.Endpoint(), "rd-1", 6006, longPrompt("r"), 8)
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 2) // one per rank
		})
		cancel()
		// Decode must have taken the cancel before the workers resume:
		// under load the router's cancel can reach it after the KV did,
		// and the request then ran to its end with no abort to desync on
		// (a clean-clone CI run saw the transfer queue at 0).
		testkit.Eventually(t, 10*time.Second, func() error {
			rec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], 6006)
			if err != nil || !hasEvent(rec, "abort-request") {
				return fmt.Errorf("decode has not taken the client's cancel yet: %v", err)
			}
			return nil
		})
		must(t, h.Resume(t.Context(), allWorkers))
		answer := make(chan error, 1)
		msgs := prompt(9)
		testkit.Background(t, func(ctx context.Context) {
			answer <- testkit.Chat(ctx, c.Endpoint(), msgs, 8).Err
		})
		if !regressed {
			select {
			case err := <-answer:
				must(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("fixed engine: a new request did not complete")
			}
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			return
		}
		wedged(t, c, func() error {
			// Rank 0 dropped the request, rank 1 still lists it: the
			// all-reduce never completes and nothing moves again. (The
			// new request may or may not have reached the transfer queue
			// before the hang: under load it often has, on both ranks.)
			v, err := testkit.Gauge(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue)
			if err != nil {
				return err
			}
			if v != 1 && v != 3 {
				return fmt.Errorf("%s = %v, want 1 (the desynced request on rank 1) or 3 (and the new one on both ranks)", contract.MetricDecodeTransferQueue, v)
			}
			select {
			case err := <-answer:
				return fmt.Errorf("a request completed on a hung decode: %v", err)
			default:
				return nil
			}
		})
	})
}

func TestRegressionFreeBeforeAck(t *testing.T) {
	cfg := contract.EngineConfig{TransferWorkers: 2, ChunkPages: 1, AckTimeout: 30 * time.Second}
	runWedge(t, contract.FreeBeforeAck, cfg, func(t *testing.T, c *engine.Cluster, regressed bool) {
		prefill, decode := c.EngineURLs()[0], c.EngineURLs()[1]
		h := hooksOf(t, c)
		// Prefill hears of A's abort only when the test says so: the frame
		// proxy on the control link holds A's ABORT (other traffic flows).
		holdAbort := &protocol.HoldMessages{Link: "control/0", Kinds: []protocol.Kind{protocol.KindAbort}, Rooms: []uint64{7000}, MaxHold: time.Minute}
		heal, err := holdAbort.Inject(t.Context(), c)
		must(t, err)
		defer heal(context.Background())
		must(t, h.Pause(t.Context(), allWorkers))
		// A on worker 0, B on worker 1; same prompt length, so B is given
		// exactly the pages A freed if they were freed early.
		const roomA, roomB = uint64(7000), uint64(7001)
		textA, textB := longPrompt("alpha"), longPrompt("omega")
		testkit.Background(t, func(ctx context.Context) { _, _ = testkit.Generate(ctx, c.Endpoint(), "fba-a", roomA, textA, 8) })
		testkit.Eventually(t, 10*time.Second, func() error { _, err := heldWorker(t.Context(), h); return err })
		abortOn(t, decode, "fba-a")
		testkit.Eventually(t, 10*time.Second, func() error {
			if _, held, err := testkit.RoomOn(t.Context(), decode, roomA); err != nil || held {
				return fmt.Errorf("decode has not dropped A yet")
			}
			return nil
		})
		answerB := make(chan string, 1)
		testkit.Background(t, func(ctx context.Context) {
			got, err := testkit.Generate(ctx, c.Endpoint(), "fba-b", roomB, textB, 8)
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
		must(t, h.Resume(t.Context(), contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: 1}))
		testkit.Eventually(t, 10*time.Second, func() error {
			rec, _, err := testkit.RoomOn(t.Context(), decode, roomB)
			if err != nil || rec.State != "Success" {
				return fmt.Errorf("B's KV not all received yet (%q)", rec.State)
			}
			return nil
		})
		// A's in-flight write lands now, into whatever its pages became.
		must(t, h.Resume(t.Context(), contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: 0}))
		testkit.Eventually(t, 10*time.Second, func() error {
			v, err := testkit.Gauge(t.Context(), decode+contract.PathMetrics, contract.MetricStrayChunks)
			if err != nil || v < 1 {
				return fmt.Errorf("A's stale write has not landed (%v, %v)", v, err)
			}
			return nil
		})
		must(t, h.Resume(t.Context(), decodeSched))
		must(t, heal(t.Context()))
		var got string
		select {
		case got = <-answerB:
		case <-time.After(10 * time.Second):
			t.Fatal("B did not finish")
		}
		foreign, err := testkit.Gauge(t.Context(), decode+contract.PathMetrics, contract.MetricForeignWrites)
		must(t, err)
		if regressed != (foreign > 0) {
			t.Errorf("%s = %v on the %s engine", contract.MetricForeignWrites, foreign, map[bool]string{true: "regressed", false: "fixed"}[regressed])
		}
		want := model.Expected(textB, 8)
		if regressed && got == want {
			t.Fatalf("free-before-ack: B's answer is intact; want corruption from A's late write")
		}
		if !regressed && got != want {
			t.Fatalf("fixed engine: B's answer corrupted\n got %q\nwant %q", got, want)
		}
		_ = prefill
	})
}
