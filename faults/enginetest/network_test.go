package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// newNetwork returns an embedded Toxiproxy closed before the cluster is:
// call it after startCluster. Close must leave no proxy behind.
func newNetwork(t *testing.T) *network.Network {
	t.Helper()
	n := network.New()
	t.Cleanup(func() {
		if err := n.Close(context.Background()); err != nil {
			t.Errorf("close network: %v", err)
		}
		if px := n.Proxies(); len(px) != 0 {
			t.Errorf("proxies left after close: %v", px)
		}
	})
	return n
}

func inject(t *testing.T, c faults.Target, f faults.Fault) faults.Heal {
	t.Helper()
	heal, err := f.Inject(t.Context(), c)
	if err != nil {
		t.Fatalf("inject %s: %v", f.Name(), err)
	}
	t.Cleanup(func() { _ = heal(context.Background()) }) // a failed test still heals
	return heal
}

func mustHeal(t *testing.T, f faults.Fault, heal faults.Heal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := heal(ctx); err != nil {
		t.Fatalf("heal %s: %v", f.Name(), err)
	}
}

func effective(t *testing.T, f faults.Fault, want bool) faults.Evidence {
	t.Helper()
	ev := f.Evidence()
	if ev.Effective != want {
		t.Errorf("%s: evidence effective=%v, want %v: %+v", f.Name(), ev.Effective, want, ev)
	}
	return ev
}

func noToxics(t *testing.T, n *network.Network) {
	t.Helper()
	for link, tx := range n.Toxics() {
		if len(tx) > 0 {
			t.Errorf("toxics left on %s after heal: %v", link, tx)
		}
	}
}

// Latency on the KV stream delays every transfer by at least the delay.
func TestNetworkLatencyOnKV(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	n := newNetwork(t)
	const delay = 300 * time.Millisecond
	f := &network.Latency{Net: n, Link: "kv/0", Stream: network.Upstream, Delay: delay}
	heal := inject(t, c, f)

	start := time.Now()
	if err := testkit.ChatExact(t.Context(), c.Endpoint(), prompt("latency"), 8); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("request took %v under %v of KV latency, want at least the delay", took, delay)
	}
	mustHeal(t, f, heal)
	ev := effective(t, f, true)
	if ev.Counters["bytes_upstream"] == 0 {
		t.Errorf("no KV bytes went through the delayed link: %+v", ev)
	}
	noToxics(t, n)
	healthyAfter(t, c, 10*time.Second)
}

// reset_peer on the control link loses decode's registrations and metadata
// (the PUSH loses what it was sending on a reset): requests of that window
// cannot complete, and the fixed engine's deadlines retire their rooms.
// The reset happens in pdchaos's relay, not Toxiproxy's reset_peer toxic
// (which leaked a goroutine per reset connection), so this test is strictly
// leak-checked like the others.
func TestNetworkResetPeerOnControl(t *testing.T) {
	testkit.NoLeaks(t)
	cfg := shortDeadlines(contract.EngineConfig{})
	c := testcluster.Start(t, cfg)
	n := newNetwork(t)
	f := &network.ResetPeer{Net: n, Link: "control/0", Stream: network.Upstream}
	heal := inject(t, c, f)

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	msgs := prompt("reset")
	r := testkit.Chat(ctx, c.Endpoint(), msgs, 8)
	if r.Err == nil {
		t.Fatalf("request completed (%q) although every control message was lost", r.Text)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("request hung instead of failing by the engine's deadlines: %v", r.Err)
	}
	t.Logf("request during reset_peer: %v", r.Err)
	if r.Room != 0 {
		rec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[0], r.Room)
		if err == nil && eventIndex(rec, "metadata") >= 0 {
			t.Errorf("prefill saw metadata of room %d although control was reset: %v", r.Room, eventKinds(rec))
		}
	}
	// Rooms retired by deadline, not by luck: everything drains with the
	// fault on, the ABORTs and their resends lost with everything else.
	testkit.Eventually(t, drainAllAbortsLost(cfg), func() error { return testkit.Drained(t.Context(), c) })
	mustHeal(t, f, heal)
	ev := effective(t, f, true)
	if ev.Counters["connections_closed"] == 0 {
		t.Errorf("reset_peer closed no connection: %+v", ev)
	}
	noToxics(t, n)
	healthyAfter(t, c, 10*time.Second)
}

// A downed router→decode link makes the router answer an error, promptly,
// and the prefill half of the request is retired.
func TestNetworkLinkDownRouterDecode(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, shortDeadlines(contract.EngineConfig{}))
	n := newNetwork(t)
	// Put the proxy in place and let the router keep a connection through
	// it, so going down has an open connection to cut.
	warm := &network.Latency{Net: n, Link: "router-decode", Delay: time.Millisecond}
	wheal := inject(t, c, warm)
	if err := testkit.ChatExact(t.Context(), c.Endpoint(), prompt("warm"), 4); err != nil {
		t.Fatal(err)
	}
	mustHeal(t, warm, wheal)

	f := &network.LinkDown{Net: n, Link: "router-decode"}
	heal := inject(t, c, f)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r := testkit.Chat(ctx, c.Endpoint(), prompt("down"), 8)
	if r.Err == nil {
		t.Fatalf("request completed (%q) with decode unreachable", r.Text)
	}
	if ctx.Err() != nil {
		t.Fatalf("router hung instead of answering an error: %v", r.Err)
	}
	if !strings.Contains(r.Err.Error(), "status 5") {
		t.Errorf("want a 5xx from the router, got %v", r.Err)
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
	mustHeal(t, f, heal)
	effective(t, f, true)
	healthyAfter(t, c, 10*time.Second)
}

// Bandwidth and slicer on the KV stream change timing and write boundaries,
// never the bytes: answers stay exact.
func TestNetworkBandwidthAndSlicerOnKV(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	n := newNetwork(t)
	for _, f := range []faults.Fault{
		&network.Bandwidth{Net: n, Link: "kv/0", Stream: network.Upstream, RateKB: 8},
		&network.Slicer{Net: n, Link: "kv/0", Stream: network.Upstream, AverageSize: 7, Delay: 50 * time.Microsecond},
	} {
		t.Run(f.Name(), func(t *testing.T) {
			heal := inject(t, c, f)
			for i := range 3 {
				if err := testkit.ChatExact(t.Context(), c.Endpoint(), prompt(fmt.Sprintf("%s-%d", f.Name(), i)), 8); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			mustHeal(t, f, heal)
			ev := effective(t, f, true)
			if ev.Counters["bytes_upstream"] == 0 {
				t.Errorf("no KV bytes through the link: %+v", ev)
			}
			noToxics(t, n)
			healthyAfter(t, c, 10*time.Second)
		})
	}
}

// limit_data cuts the KV stream mid-chunk: no request of that window gets a
// wrong answer (it fails or, if it needed fewer bytes, completes exactly),
// and the engine drains with the fault still on.
func TestNetworkLimitDataOnKV(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, shortDeadlines(contract.EngineConfig{}))
	n := newNetwork(t)
	f := &network.LimitData{Net: n, Link: "kv/0", Stream: network.Upstream, Bytes: 512}
	heal := inject(t, c, f)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	failed := 0
	for i := range 2 {
		err := testkit.ChatExact(ctx, c.Endpoint(), prompt(fmt.Sprintf("limit-%d", i)), 8)
		if ctx.Err() != nil {
			t.Fatalf("request %d hung: %v", i, err)
		}
		if err != nil && strings.Contains(err.Error(), "answer") {
			t.Fatalf("request %d: wrong answer with a cut KV stream: %v", i, err)
		}
		if err != nil {
			failed++
			t.Logf("request %d during limit_data: %v", i, err)
		}
	}
	if failed == 0 {
		t.Errorf("every request completed although the KV stream was cut after %d bytes", f.Bytes)
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
	mustHeal(t, f, heal)
	ev := effective(t, f, true)
	if ev.Counters["connections_closed"] == 0 {
		t.Errorf("limit_data closed no connection: %+v", ev)
	}
	noToxics(t, n)
	healthyAfter(t, c, 10*time.Second)
}
