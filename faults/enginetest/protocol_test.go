package enginetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// forEachWire runs a protocol-fault test once per wire dialect, each on
// its own cluster, one after the other.
func forEachWire(t *testing.T, test func(*testing.T, contract.Wire)) {
	t.Helper()
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) { test(t, w) })
	}
}

// knownOnly fails when the proxy met a message it could not classify: on
// the bundled engine every message of every dialect has a known layout.
func knownOnly(t *testing.T, ev faults.Evidence) {
	t.Helper()
	if n, ok := ev.Counters["unknown"]; !ok || n != 0 {
		t.Errorf("evidence shows unknown=%d (present %v), want 0: %+v", n, ok, ev.Counters)
	}
}

// heldRoom waits until prefill holds exactly one room and returns it.
func heldRoom(t *testing.T, c *engine.Cluster) uint64 {
	t.Helper()
	var room uint64
	testkit.Eventually(t, 10*time.Second, func() error {
		r, err := testkit.Rooms(t.Context(), c.EngineURLs()[0])
		if err != nil {
			return err
		}
		if len(r.Held) != 1 {
			return fmt.Errorf("prefill holds %d rooms, want 1", len(r.Held))
		}
		room = r.Held[0].Room
		return nil
	})
	return room
}

// The headline race: decode's ABORT for a room overtakes that room's
// metadata. The client goes away while prefill is still bootstrapping the
// room; the frame proxy holds the metadata until the ABORT has passed.
// Prefill's history shows the ABORT before the metadata, and the fixed
// engine still clears every room, well before its deadlines could.
func TestProtocolAbortBeforeMetadata(t *testing.T) {
	testkit.NoLeaks(t)
	forEachWire(t, testAbortBeforeMetadata)
}

func testAbortBeforeMetadata(t *testing.T, w contract.Wire) {
	c := testcluster.Start(t, shortDeadlines(contract.EngineConfig{Wire: w, PrefillTokensPerSec: 200}))
	f := &protocol.AbortBeforeMetadata{Link: "control/0"}
	heal := inject(t, c, f)

	res, cancel := testkit.Async(t, func(ctx context.Context) testkit.ChatResult {
		return testkit.Chat(ctx, c.Endpoint(), prompt("abm"), 50)
	})
	room := heldRoom(t, c)
	testkit.Eventually(t, 10*time.Second, func() error {
		if ev := f.Evidence(); ev.Counters["held"] < 1 {
			return fmt.Errorf("metadata not held yet: %+v", ev.Counters)
		}
		return nil
	})
	if err := testkit.NotDone(res); err != nil {
		t.Fatal(err)
	}
	cancel() // the client leaves during prefill
	testkit.Recv(t, res, 10*time.Second)

	prefill := c.EngineURLs()[0]
	// The room's record on prefill (the cleared one: a reopened record for
	// the same room may be held meanwhile) shows the ABORT, or the
	// tombstone it leaves for an absent room, before the metadata, or
	// with no metadata after it.
	testkit.Eventually(t, 10*time.Second, func() error {
		r, err := testkit.Rooms(t.Context(), prefill)
		if err != nil {
			return err
		}
		var seen [][]string
		for _, rec := range append(r.Cleared, r.Held...) {
			if rec.Room != room {
				continue
			}
			a, m := eventIndex(rec, "abort-received", "abort-tombstone"), eventIndex(rec, "metadata", "metadata-after-abort")
			// No metadata in the record at all counts too: on a loaded
			// machine the router's cancel can fail the room first, and
			// decode's ABORT then clears it before the held metadata lands
			// (answered Failed at once, outside the record). That the
			// metadata did follow the ABORT is the proxy's evidence below.
			if a >= 0 && (m < 0 || a < m) {
				t.Logf("prefill room %d (cleared=%v): %v", room, rec.Cleared, eventKinds(rec))
				return nil
			}
			seen = append(seen, eventKinds(rec))
		}
		return fmt.Errorf("room %d: no record with the ABORT before the metadata: %v", room, seen)
	})
	// The proxy counts an overtaking once the write to prefill has returned,
	// which can be after prefill has already read and recorded it.
	var ev faults.Evidence
	testkit.Eventually(t, 10*time.Second, func() error {
		ev = f.Evidence()
		if !ev.Effective || ev.Counters["overtaken"] < 1 || ev.Counters["seen_abort"] < 1 || ev.Counters["seen_metadata"] < 1 {
			return fmt.Errorf("evidence does not show the reorder: %+v", ev)
		}
		return nil
	})
	knownOnly(t, ev)
	// The fixed engine ends every room cleared, on both sides.
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
	for _, base := range c.EngineURLs() {
		rec, held, err := testkit.RoomOn(t.Context(), base, room)
		if err != nil || held || !rec.Cleared || rec.LastState != "Failed" {
			t.Errorf("%s: room %d want cleared after Failed, got held=%v %+v (%v)", base, room, held, rec, err)
		}
	}
	mustHeal(t, f, heal)
	healthyAfter(t, c, 10*time.Second)
}

// Delayed registrations and metadata slow requests by at least the delay
// and change nothing else.
func TestProtocolDelayMessages(t *testing.T) {
	testkit.NoLeaks(t)
	forEachWire(t, testDelayMessages)
}

func testDelayMessages(t *testing.T, w contract.Wire) {
	c := testcluster.Start(t, contract.EngineConfig{Wire: w})
	const delay = 250 * time.Millisecond
	f := &protocol.DelayMessages{Link: "control/0", Kinds: []protocol.Kind{protocol.KindRegistration, protocol.KindMetadata}, Min: delay, Max: delay}
	heal := inject(t, c, f)
	for i := range 2 {
		start := time.Now()
		if err := testkit.ChatExact(t.Context(), c.Endpoint(), prompt(fmt.Sprintf("delay-%d", i)), 8); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("request %d took %v with metadata delayed %v", i, took, delay)
		}
	}
	mustHeal(t, f, heal)
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["delayed"] < 3 || ev.Counters["seen_metadata"] < 2 || ev.Counters["seen_registration"] < 1 {
		t.Errorf("evidence: want the registration and >= 2 metadata delayed: %+v", ev)
	}
	knownOnly(t, ev)
	t.Logf("evidence %+v", ev.Counters)
	healthyAfter(t, c, 10*time.Second)
}

// Lost ABORTs: the client leaves during prefill, decode's ABORT never
// reaches prefill, so no ABORT_ACK comes back. The fixed engine still
// drains: prefill retires the room when its own request ends, decode frees
// the pages after the ack timeout, or, on Mooncake (no name to retire), on
// the ACK of a resend once the link heals.
func TestProtocolDropAbort(t *testing.T) {
	testkit.NoLeaks(t)
	forEachWire(t, testDropAbort)
}

func testDropAbort(t *testing.T, w contract.Wire) {
	cfg := shortDeadlines(contract.EngineConfig{Wire: w, PrefillTokensPerSec: 200})
	c := testcluster.Start(t, cfg)
	f := &protocol.Drop{Link: "control/0", Kinds: []protocol.Kind{protocol.KindAbort}}
	heal := inject(t, c, f)

	res, cancel := testkit.Async(t, func(ctx context.Context) testkit.ChatResult {
		return testkit.Chat(ctx, c.Endpoint(), prompt("drop"), 50)
	})
	room := heldRoom(t, c)
	// Cancel only once decode has sent the room's metadata through the
	// proxy: a client that leaves before decode has even bootstrapped has
	// no ABORT to send (prefill holding the room says nothing about that,
	// and under load decode's first connection can come late).
	testkit.Eventually(t, 10*time.Second, func() error {
		if ev := f.Evidence(); ev.Counters["seen_metadata"] < 1 {
			return fmt.Errorf("decode's metadata not through the proxy yet: %+v", ev.Counters)
		}
		return nil
	})
	cancel()
	testkit.Recv(t, res, 10*time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		if ev := f.Evidence(); ev.Counters["dropped"] < 1 {
			return fmt.Errorf("no ABORT dropped yet: %+v", ev.Counters)
		}
		return nil
	})
	if w == contract.WireMooncake {
		// Mooncake cannot retire decode's name, so a late write could not
		// be refused: decode keeps the pages through every resend's ACK
		// timeout and goes on resending, and frees them on the ACK that
		// follows the heal.
		testkit.Eventually(t, drainAllAbortsLost(cfg), func() error {
			if n := probeHits(t, c.EngineURLs()[1], "decode/unfenced-ack-resent"); n < 1 {
				return fmt.Errorf("no ABORT resent past the last resend yet (unfenced-ack-resent %d)", n)
			}
			return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricAwaitingAck, 1)
		})
		mustHeal(t, f, heal)
		testkit.Eventually(t, drainAllAbortsLost(cfg), func() error { return testkit.Drained(t.Context(), c) })
		if n := probeHits(t, c.EngineURLs()[1], "decode/ack-timeout-free"); n != 0 {
			t.Errorf("decode freed the pages without an ACK on Mooncake (ack-timeout-free %d)", n)
		}
		ev := f.Evidence()
		if !ev.Effective || ev.Counters["seen_abort"] < 1 {
			t.Errorf("evidence: %+v", ev)
		}
		knownOnly(t, ev)
		healthyAfter(t, c, 10*time.Second)
		return
	}
	// Every ABORT and each of its resends is dropped: the pages are freed
	// only after the last resend's ACK timeout.
	testkit.Eventually(t, drainAllAbortsLost(cfg), func() error { return testkit.Drained(t.Context(), c) })
	rec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[0], room)
	if err != nil {
		t.Fatal(err)
	}
	if i := eventIndex(rec, "abort-received", "abort-tombstone"); i >= 0 {
		t.Errorf("prefill received the ABORT the proxy dropped: %v", eventKinds(rec))
	}
	t.Logf("prefill room %d: %v", room, eventKinds(rec))
	if drec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], room); err == nil {
		t.Logf("decode room %d: %v", room, eventKinds(drec))
		if eventIndex(drec, "abort-ack") >= 0 {
			t.Errorf("decode got an ABORT_ACK for an ABORT prefill never saw: %v", eventKinds(drec))
		}
	}
	mustHeal(t, f, heal)
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["seen_abort"] < 1 {
		t.Errorf("evidence: %+v", ev)
	}
	knownOnly(t, ev)
	healthyAfter(t, c, 10*time.Second)
}

// Duplicated metadata is harmless: answers stay exact, nothing leaks.
func TestProtocolDuplicateMetadata(t *testing.T) {
	testkit.NoLeaks(t)
	forEachWire(t, testDuplicateMetadata)
}

func testDuplicateMetadata(t *testing.T, w contract.Wire) {
	c := testcluster.Start(t, contract.EngineConfig{Wire: w})
	f := &protocol.Duplicate{Link: "control/0", Kinds: []protocol.Kind{protocol.KindMetadata}}
	heal := inject(t, c, f)
	for i := range 3 {
		text := longText(fmt.Sprintf("dup%d", i))
		got, err := testkit.Generate(t.Context(), c.Endpoint(), fmt.Sprintf("dup-%d", i), uint64(4000+i), text, 8)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if want := model.Expected(text, 8); got != want {
			t.Fatalf("request %d: answer %q, want %q", i, got, want)
		}
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
	mustHeal(t, f, heal)
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["duplicated"] < 3 {
		t.Errorf("evidence: want >= 3 duplicated: %+v", ev)
	}
	knownOnly(t, ev)
	healthyAfter(t, c, 10*time.Second)
}

// The notify link carries prefill's ABORT_ACK and failure status in each
// dialect's layout; the proxy knows both. A duplicated ACK is harmless.
func TestProtocolNotifyLink(t *testing.T) {
	testkit.NoLeaks(t)
	forEachWire(t, func(t *testing.T, w contract.Wire) {
		c := testcluster.Start(t, shortDeadlines(contract.EngineConfig{Wire: w, PrefillTokensPerSec: 200}))
		f := &protocol.Duplicate{Link: "notify/0", Kinds: []protocol.Kind{protocol.KindAck, protocol.KindStatus}}
		heal := inject(t, c, f)
		res, cancel := testkit.Async(t, func(ctx context.Context) testkit.ChatResult {
			return testkit.Chat(ctx, c.Endpoint(), prompt("notify"), 50)
		})
		room := heldRoom(t, c)
		// Cancel only once decode has sent the room's metadata: a request
		// cancelled in decode's prealloc queue sends no ABORT, so prefill
		// has no ACK to send (seen under load: the proxy had conns:0).
		testkit.Eventually(t, 10*time.Second, func() error {
			rec, held, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], room)
			if err != nil || !held || eventIndex(rec, "metadata-sent") < 0 {
				return fmt.Errorf("decode has not sent room %d's metadata yet (held %v, %v)", room, held, err)
			}
			return nil
		})
		cancel()
		testkit.Recv(t, res, 10*time.Second)
		testkit.Eventually(t, 10*time.Second, func() error {
			if ev := f.Evidence(); ev.Counters["seen_ack"] < 1 || ev.Counters["duplicated"] < 1 {
				return fmt.Errorf("no ABORT_ACK duplicated yet: %+v", ev.Counters)
			}
			return nil
		})
		testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
		rec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], room)
		if err != nil {
			t.Fatal(err)
		}
		if eventIndex(rec, "abort-ack") < 0 || eventIndex(rec, "ack-timeout") >= 0 {
			t.Errorf("decode room %d: want pages freed on the ABORT_ACK: %v", room, eventKinds(rec))
		}
		mustHeal(t, f, heal)
		ev := f.Evidence()
		knownOnly(t, ev)
		t.Logf("evidence %+v", ev.Counters)
		healthyAfter(t, c, 10*time.Second)
	})
}

// probeHits is the hit count of the named probe on the engine at base.
func probeHits(t *testing.T, base, name string) int64 {
	t.Helper()
	got, err := testkit.Probes(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Probes {
		if p.Name == name {
			return p.Hits
		}
	}
	t.Fatalf("%s has no probe %q", base, name)
	return 0
}
