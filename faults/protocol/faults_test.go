package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func inject(t *testing.T, f faults.Fault, tgt *fakeTarget) faults.Heal {
	t.Helper()
	heal, err := f.Inject(testkit.Context(t), tgt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = heal(context.Background()) })
	return heal
}

func TestAbortBeforeMetadataFault(t *testing.T) {
	pull, tgt := pair(t)
	f := &AbortBeforeMetadata{Link: "control/0"}
	if f.Layer() != faults.LayerProtocol || f.Evidence().Effective {
		t.Fatal("fresh fault must be protocol-layer and not effective")
	}
	heal := inject(t, f, tgt)
	push := dialT(t, tgt.viaAddr())
	send(t, push, metadata("1"), metadata("2"), abort("1"), msg("other"))
	got := recvN(t, pull, 3)
	order := []string{first(got[0]), first(got[1]), first(got[2])}
	if strings.Join(order, " ") != "ABORT/1 "+GuardFrame+"/1 other/" {
		t.Fatalf("order %v", order)
	}
	// Room 2 stays held until Heal, which must release it.
	if err := heal(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := heal(testkit.Context(t)); err != nil {
		t.Fatalf("second heal: %v", err)
	}
	rest := recvN(t, pull, 1)
	if first(rest[0]) != GuardFrame+"/2" {
		t.Fatalf("held metadata of room 2 not released on heal")
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := f.Evidence().Counters["overtaken"]; n != 1 {
			return fmt.Errorf("overtaken = %d, want 1 (room 1 only)", n)
		}
		return nil
	})
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["held"] != 2 || ev.Counters["seen_metadata"] != 2 {
		t.Fatalf("evidence %+v", ev)
	}
	if tgt.restored != 1 {
		t.Fatalf("restored %d times", tgt.restored)
	}
}

// Metadata held for an ABORT that never comes and let go by MaxHold is
// written after later messages, but nothing overtook it: the fault is not
// effective, and the timeout is counted apart.
func TestAbortBeforeMetadataTimeoutIsNotEvidence(t *testing.T) {
	pull, tgt := pair(t)
	f := &AbortBeforeMetadata{Link: "control/0", MaxHold: 50 * time.Millisecond}
	inject(t, f, tgt)
	push := dialT(t, tgt.viaAddr())
	send(t, push, metadata("1"), msg("other"))
	got := recvN(t, pull, 2)
	if first(got[0]) != "other/" || first(got[1]) != GuardFrame+"/1" {
		t.Fatalf("order %s %s, want the held metadata last", first(got[0]), first(got[1]))
	}
	var ev faults.Evidence
	testkit.Eventually(t, 10*time.Second, func() error {
		ev = f.Evidence()
		if ev.Counters["timed_out"] != 1 {
			return fmt.Errorf("timed_out = %d, want 1: %+v", ev.Counters["timed_out"], ev.Counters)
		}
		return nil
	})
	if ev.Effective || ev.Counters["overtaken"] != 0 {
		t.Fatalf("a MaxHold release counted as an overtaking: %+v", ev)
	}
}

func TestHealReleasesHeldInOrder(t *testing.T) {
	pull, tgt := pair(t)
	f := &HoldMessages{Link: "control/0", Kinds: []Kind{KindMetadata}, After: 1000}
	heal := inject(t, f, tgt)
	push := dialT(t, tgt.viaAddr())
	for i := range 5 {
		send(t, push, metadata(fmt.Sprint(i)))
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := f.Evidence().Counters["held"]; n != 5 {
			return fmt.Errorf("held = %d, want == 5", n)
		}
		return nil
	})
	if err := heal(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, pull, 5)
	for i, m := range got {
		if string(m[1]) != fmt.Sprint(i) {
			t.Fatalf("released out of order at %d: %s", i, m[1])
		}
	}
}

func TestHoldAfterN(t *testing.T) {
	pull, tgt := pair(t)
	f := &HoldMessages{Link: "control/0", Kinds: []Kind{KindAbort}, After: 2}
	inject(t, f, tgt)
	push := dialT(t, tgt.viaAddr())
	send(t, push, abort("9"), metadata("1"), metadata("2"), metadata("3"))
	got := recvN(t, pull, 4)
	if first(got[2]) != "ABORT/9" {
		t.Fatalf("ABORT should pass after two messages: %s %s %s", first(got[0]), first(got[1]), first(got[2]))
	}
}

func TestDropDuplicateDelay(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &Drop{Link: "control/0", Kinds: []Kind{KindAbort}, Limit: 1}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		send(t, push, abort("1"), abort("2"), metadata("3"))
		got := recvN(t, pull, 2)
		if first(got[0]) != "ABORT/2" || f.Evidence().Counters["dropped"] != 1 || !f.Evidence().Effective {
			t.Fatalf("got %s, evidence %+v", first(got[0]), f.Evidence())
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &Duplicate{Link: "control/0", Kinds: []Kind{KindRegistration}}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		send(t, push, msg(GuardFrame, "None", "ip", "1", "a"), abort("1"))
		got := recvN(t, pull, 3)
		if first(got[0]) != first(got[1]) || first(got[2]) != "ABORT/1" {
			t.Fatalf("got %s %s %s", first(got[0]), first(got[1]), first(got[2]))
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &Corrupt{Link: "control/0", Kinds: []Kind{KindAbort, KindMetadata}, Limit: 2}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		send(t, push, abort("1"), metadata("2"), abort("3"))
		got := recvN(t, pull, 3)
		if first(got[0]) != "ABORT/pdchaos-corrupt-1" || string(got[0][3]) != "pdchaos-corrupt-17000" {
			t.Errorf("garbled ABORT: %q", got[0])
		}
		if first(got[1]) != GuardFrame+"/pdchaos-corrupt-2" || len(got[1]) != len(metadata("2")) {
			t.Errorf("garbled metadata: %q", got[1])
		}
		if first(got[2]) != "ABORT/3" || string(got[2][3]) != "17000" {
			t.Errorf("past the limit, not corrupted: %q", got[2])
		}
		// Garbled, the room is no longer a room: the classifier, as any
		// receiver, cannot read it.
		if _, _, hasRoom := Classify(got[0]); hasRoom {
			t.Errorf("a garbled ABORT still classifies with a room")
		}
		if ev := f.Evidence(); ev.Counters["corrupted"] != 2 || !ev.Effective {
			t.Errorf("evidence %+v, want corrupted 2 and effective", ev)
		}
	})
	t.Run("corrupt truncate", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &Corrupt{Link: "control/0", Kinds: []Kind{KindMetadata}, Mode: faults.CorruptTruncate}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		send(t, push, metadata("5"), abort("5"))
		got := recvN(t, pull, 2)
		if want := metadata("5")[:len(metadata("5"))-1]; fmt.Sprint(got[0]) != fmt.Sprint(want) || first(got[1]) != "ABORT/5" {
			t.Errorf("truncated metadata %q then %q", got[0], got[1])
		}
	})
	t.Run("corrupt refuses a bad mode", func(t *testing.T) {
		_, tgt := pair(t)
		f := &Corrupt{Link: "control/0", Mode: "shred"}
		if _, err := f.Inject(testkit.Context(t), tgt); err == nil || !strings.Contains(err.Error(), `"shred"`) {
			t.Fatalf("inject with mode shred: err %v, want one naming the mode", err)
		}
	})
	t.Run("delay reorders", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &DelayMessages{Link: "control/0", Kinds: []Kind{KindAbort}, Min: 50 * time.Millisecond, Max: 80 * time.Millisecond, Rand: rand.New(rand.NewPCG(1, 2))}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		start := time.Now()
		send(t, push, abort("1"), metadata("1"))
		got := recvN(t, pull, 2)
		if first(got[0]) != GuardFrame+"/1" || time.Since(start) < 50*time.Millisecond {
			t.Fatalf("delayed ABORT not overtaken: %s", first(got[0]))
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := f.Evidence().Counters["reordered"]; n != 1 {
				return fmt.Errorf("reordered = %d, want == 1", n)
			}
			return nil
		})
		ev := f.Evidence()
		if !ev.Effective || ev.Counters["delay_ms"] < 50 {
			t.Fatalf("evidence %+v", ev)
		}
	})
	t.Run("unmatched is not effective", func(t *testing.T) {
		pull, tgt := pair(t)
		f := &Drop{Link: "control/0", Kinds: []Kind{KindAck}}
		inject(t, f, tgt)
		push := dialT(t, tgt.viaAddr())
		send(t, push, abort("1"))
		recvN(t, pull, 1)
		if f.Evidence().Effective {
			t.Fatal("a rule that matched nothing reported effective")
		}
	})
}

func TestInjectRefusesAndLeavesNothing(t *testing.T) {
	_, tgt := pair(t)
	for _, link := range []string{"nope", "bootstrap"} {
		_, err := (&Drop{Link: link}).Inject(testkit.Context(t), tgt)
		if !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), link) {
			t.Fatalf("link %s: %v", link, err)
		}
	}
	if _, err := (&DelayMessages{Link: "control/0", Max: time.Second}).Inject(testkit.Context(t), tgt); err == nil {
		t.Fatal("random delay without a seeded Rand accepted")
	}
	tgt.interpose = func(ctx context.Context, _, _ string) error {
		return errors.New("boom")
	}
	if _, err := (&Drop{Link: "control/0"}).Inject(testkit.Context(t), tgt); err == nil {
		t.Fatal("interpose failure not reported")
	}
	assertClosed(t, tgt.viaAddr())

	ctx, cancel := context.WithCancel(context.Background())
	tgt.interpose = func(ctx context.Context, _, _ string) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	if _, err := (&Drop{Link: "control/0"}).Inject(ctx, tgt); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled inject: %v", err)
	}
	assertClosed(t, tgt.viaAddr())
}

func assertClosed(t *testing.T, addr string) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("proxy listener %s still open after failed inject", addr)
	}
}

func TestRouteRewriter(t *testing.T) {
	boot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/route" && r.URL.Query().Get("target_tp_rank") == "-1":
			_, _ = io.WriteString(w, `{"attn_tp_size":1,"dp_size":1}`)
		case r.URL.Path == "/route":
			_, _ = io.WriteString(w, `{"rank_ip":"10.0.0.5","rank_port":17000,"extra":true}`)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer boot.Close()
	u, _ := url.Parse(boot.URL)
	rr := NewRouteRewriter(u)
	rr.Map("10.0.0.5:17000", "127.0.0.1:45678")
	front := httptest.NewServer(rr)
	defer front.Close()
	get := func(path string) string {
		resp, err := http.Get(front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get("/route?prefill_dp_rank=0&target_tp_rank=0"); got != `{"extra":true,"rank_ip":"127.0.0.1","rank_port":45678}` {
		t.Fatalf("rewritten: %s", got)
	}
	if got := get("/route?target_tp_rank=-1"); got != `{"attn_tp_size":1,"dp_size":1}` {
		t.Fatalf("topology answer changed: %s", got)
	}
	if got := get("/health"); got != "ok" {
		t.Fatalf("health: %s", got)
	}
	rr.Unmap("10.0.0.5:17000")
	if got := get("/route?target_tp_rank=0"); !strings.Contains(got, "10.0.0.5") {
		t.Fatalf("unmapped answer rewritten: %s", got)
	}
}

// A message of unknown layout escapes no fault silently: an all-kinds Drop
// lets it through untouched, and the evidence counts it as "unknown".
func TestUnknownPassesAndIsCounted(t *testing.T) {
	pull, tgt := pair(t)
	f := &Drop{Link: "control/0"}
	heal := inject(t, f, tgt)
	push := dialT(t, tgt.viaAddr())
	send(t, push, msg("junk", "x"), abort("3"), msg("junk", "y"))
	got := recvN(t, pull, 2)
	if first(got[0]) != "junk/x" || first(got[1]) != "junk/y" {
		t.Fatalf("unknown messages not relayed: %s, %s", first(got[0]), first(got[1]))
	}
	ev := f.Evidence()
	if ev.Counters["unknown"] != 2 || ev.Counters["dropped"] != 1 || ev.Counters["seen_abort"] != 1 {
		t.Fatalf("evidence %+v, want 2 unknown passed and the ABORT dropped", ev.Counters)
	}
	fresh := &Drop{Link: "control/0", Kinds: []Kind{KindMetadata}}
	if ev := fresh.Evidence(); ev.Counters["unknown"] != 0 || ev.Effective {
		t.Fatalf("fresh evidence %+v, want unknown=0 shown", ev)
	}
	if err := heal(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
}
