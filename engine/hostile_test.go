package engine_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/hostilepeer"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// hostileSettings reads how long the hostile peers run
// (PDCHAOS_HOSTILE_DURATION, default 2s, e.g. 10m by hand) and their seed
// (PDCHAOS_HOSTILE_SEED, default 1).
func hostileSettings(t *testing.T) (time.Duration, uint64) {
	t.Helper()
	d, seed := 2*time.Second, uint64(1)
	if s := os.Getenv("PDCHAOS_HOSTILE_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("PDCHAOS_HOSTILE_DURATION=%q: %v", s, err)
		}
		d = v
	}
	if s := os.Getenv("PDCHAOS_HOSTILE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PDCHAOS_HOSTILE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	return d, seed
}

// The fixed engine survives hostile peers. While normal requests run, a
// hostile decode sends fuzzed, truncated, oversized and out-of-order control
// messages (and raw junk) to prefill's control socket and junk notices to
// decode's notify socket, and a hostile prefill sends malformed KV chunks to
// decode's KV listener. Every normal request still gets its exact answer,
// every room is terminal and cleared after the drain, the bootstrap loop is
// alive, and the refusals are counted: every KV message and every junk ZMTP
// connection refused exactly once, and at least every control message the
// dialect cannot parse.
func TestHostilePeers(t *testing.T) {
	testkit.NoLeaks(t)
	dur, seed := hostileSettings(t)
	t.Logf("hostile peers for %v, seed %d (PDCHAOS_HOSTILE_DURATION, PDCHAOS_HOSTILE_SEED)", dur, seed)
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			// Metadata a hostile decode registered for rooms with no
			// request is swept after the bootstrap timeout: short enough
			// for the drain, long enough for real requests on a busy CI.
			// Decode paced, so rooms sit committed and decoding while the
			// peers look for them.
			c := testcluster.Start(t, contract.EngineConfig{Wire: w, BootstrapTimeout: 5 * time.Second, DecodeTokensPerSec: 200})
			h, err := hostilepeer.New(hostilepeer.Target{Wire: w, Prefill: c.Prefill.Addrs(), Decode: c.Decode.Addrs(), KVTargets: c.Decode.KVTargets()})
			must(t, err)
			ctx, stop := context.WithTimeout(t.Context(), dur)
			defer stop()
			var served atomic.Int64
			g, gctx := errgroup.WithContext(ctx)
			for i := range 4 {
				g.Go(func() error {
					for n := 0; gctx.Err() == nil; n++ {
						if err := exactChat(t.Context(), c, 1000*i+n); err != nil {
							return err
						}
						served.Add(1)
					}
					return nil
				})
			}
			g.Go(func() error { return h.Run(gctx, seed) })
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			// After the storm: the loops still serve, and everything drains.
			for i := range 4 {
				must(t, exactChat(t.Context(), c, 9000+i))
				served.Add(1)
			}
			prefillM, decodeM := c.MetricsURLs()[0], c.MetricsURLs()[1]
			st := h.Stats()
			testkit.Eventually(t, 30*time.Second, func() error {
				if err := testkit.Drained(t.Context(), c); err != nil {
					return err
				}
				if err := testkit.GaugeIs(t.Context(), decodeM, contract.MetricMalformedKV, float64(st.MalformedKV)); err != nil {
					return err
				}
				// A chunk on a connection reset at once is stray if decode
				// read it before the reset.
				if v, err := testkit.Gauge(t.Context(), decodeM, contract.MetricStrayChunks); err != nil {
					return err
				} else if int(v) < st.StrayKV || int(v) > st.StrayKV+st.Reset {
					return fmt.Errorf("decode %s = %v, want between %d and %d (%d reset)", contract.MetricStrayChunks, v, st.StrayKV, st.StrayKV+st.Reset, st.Reset)
				}
				for _, m := range []struct {
					url      string
					min, max int
					side     string
				}{{prefillM, st.UnparsedControl, st.Control, "prefill"}, {decodeM, st.UnparsedNotices, st.Notices, "decode"}} {
					v, err := testkit.Gauge(t.Context(), m.url, contract.MetricMalformedControl)
					if err != nil {
						return err
					}
					if int(v) < m.min || int(v) > m.max {
						return fmt.Errorf("%s %s = %v, want between %d (unparsable) and %d (sent)", m.side, contract.MetricMalformedControl, v, m.min, m.max)
					}
				}
				if err := testkit.GaugeIs(t.Context(), prefillM, contract.MetricRefusedPeers, float64(st.Junk)); err != nil {
					return err
				}
				if err := testkit.GaugeIs(t.Context(), decodeM, contract.MetricRefusedPeers, 0); err != nil {
					return err
				}
				return testkit.GaugeIs(t.Context(), prefillM, contract.MetricBootstrapLoopAlive, 1)
			})
			// Hostile peers open no room on decode: every room there is a
			// normal request's, and each ended in Success.
			rooms, err := testkit.Rooms(t.Context(), c.EngineURLs()[1])
			must(t, err)
			for _, r := range rooms.Cleared {
				if r.LastState != contract.StateSuccess {
					t.Errorf("decode room %d ended %s, want %s", r.Room, r.LastState, contract.StateSuccess)
				}
			}
			if st.Routes == 0 {
				t.Error("no route lookup for a rank prefill lacks was answered")
			}
			if w == contract.WireMooncake && st.Held == 0 {
				t.Error("no chunk was sent for a room decode held past its transfer")
			}
			if len(rooms.Cleared) == 0 {
				t.Error("decode cleared no room: the load never ran")
			}
			t.Logf("%s: %d requests answered exactly; sent %d control messages (%d unparsable), %d notices (%d unparsable), %d junk connections, %d KV messages (%d malformed, %d stray), %d routes to ranks prefill lacks",
				w, served.Load(), st.Control, st.UnparsedControl, st.Notices, st.UnparsedNotices, st.Junk, st.KV, st.MalformedKV, st.StrayKV, st.Routes)
		})
	}
}

func exactChat(ctx context.Context, c *engine.Cluster, i int) error {
	msgs := prompt(i)
	cr := testkit.Chat(ctx, c.Endpoint(), msgs, 6)
	if cr.Err != nil {
		return fmt.Errorf("request %d: %w", i, cr.Err)
	}
	if want := model.ExpectedChat(msgs, 6); cr.Text != want {
		return fmt.Errorf("request %d (room %d): got %q want %q", i, cr.Room, cr.Text, want)
	}
	return nil
}
