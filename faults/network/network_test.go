package network_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// setup returns a target with an HTTP link "http" and an echo link "kv/0",
// and a Network closed at the end of the test.
func setup(t *testing.T) (*faketarget.Target, *network.Network) {
	t.Helper()
	tg := faketarget.New(faketarget.HTTPLink(t, "http", "hello"), faketarget.EchoLink(t, "kv/0"))
	n := network.New()
	t.Cleanup(func() {
		if err := n.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		tg.CloseIdle()
	})
	return tg, n
}

func get(t *testing.T, tg *faketarget.Target) (string, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://link/", nil)
	start := time.Now()
	resp, err := tg.HTTPClient("http").Do(req)
	if err != nil {
		return "", time.Since(start), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), time.Since(start), err
}

// echo dials kv/0, writes msg and reads until want bytes came back or the
// connection ends.
func echo(t *testing.T, tg *faketarget.Target, msg []byte, want int) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tg.Dial(ctx, "kv/0")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, want)
	tmp := make([]byte, 4096)
	for len(buf) < want {
		k, err := c.Read(tmp)
		buf = append(buf, tmp[:k]...)
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func mustInject(t *testing.T, f faults.Fault, tg faults.Target) faults.Heal {
	t.Helper()
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatalf("inject %s: %v", f.Name(), err)
	}
	return heal
}

func mustHeal(t *testing.T, heal faults.Heal) {
	t.Helper()
	if err := heal(context.Background()); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if err := heal(context.Background()); err != nil {
		t.Fatalf("second heal: %v", err)
	}
}

func TestLatencyDelaysRequests(t *testing.T) {
	tg, n := setup(t)
	const delay = 150 * time.Millisecond
	f := &network.Latency{Net: n, Link: "http", Delay: delay}
	heal := mustInject(t, f, tg)
	body, took, err := get(t, tg)
	if err != nil || body != "hello" {
		t.Fatalf("get through latency: %q, %v", body, err)
	}
	if took < delay {
		t.Errorf("request took %v, want >= %v", took, delay)
	}
	mustHeal(t, heal)
	if body, _, err := get(t, tg); err != nil || body != "hello" {
		t.Fatalf("get after heal: %q, %v", body, err)
	}
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["bytes_downstream"] == 0 {
		t.Errorf("evidence %+v: want effective with bytes", ev)
	}
	if got := n.Toxics()["http"]; len(got) != 0 {
		t.Errorf("toxics left after heal: %v", got)
	}
}

func TestBandwidthThrottles(t *testing.T) {
	tg, n := setup(t)
	heal := mustInject(t, &network.Bandwidth{Net: n, Link: "kv/0", RateKB: 10}, tg)
	msg := bytes.Repeat([]byte("x"), 5000)
	start := time.Now()
	got, err := echo(t, tg, msg, len(msg))
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %d bytes, %v", len(got), err)
	}
	// 5000 bytes at 10 KB/s take about 488ms; only a lower bound is asserted.
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("5000 bytes at 10KB/s took %v, want >= 300ms", took)
	}
	mustHeal(t, heal)
	if got, err := echo(t, tg, msg, len(msg)); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo after heal: %d bytes, %v", len(got), err)
	}
}

func TestResetPeerBreaksConnections(t *testing.T) {
	tg, n := setup(t)
	f := &network.ResetPeer{Net: n, Link: "kv/0"}
	heal := mustInject(t, f, tg)
	if _, err := echo(t, tg, []byte("ping"), 4); err == nil {
		t.Fatal("echo through reset_peer succeeded")
	} else if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("error %v: want connection reset", err)
	}
	mustHeal(t, heal)
	if got, err := echo(t, tg, []byte("ping"), 4); err != nil || string(got) != "ping" {
		t.Fatalf("echo after heal: %q, %v", got, err)
	}
	if ev := f.Evidence(); !ev.Effective || ev.Counters["connections"] == 0 {
		t.Errorf("evidence %+v: want a connection seen", ev)
	}
}

func TestTimeoutStopsData(t *testing.T) {
	tg, n := setup(t)
	heal := mustInject(t, &network.Timeout{Net: n, Link: "kv/0"}, tg)
	c, err := tg.Dial(context.Background(), "kv/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if k, err := c.Read(make([]byte, 8)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through timeout toxic: %d bytes, %v; want a read timeout", k, err)
	}
	mustHeal(t, heal)
	if got, err := echo(t, tg, []byte("ping"), 4); err != nil || string(got) != "ping" {
		t.Fatalf("echo after heal: %q, %v", got, err)
	}
}

func TestSlicerKeepsBytes(t *testing.T) {
	tg, n := setup(t)
	f := &network.Slicer{Net: n, Link: "kv/0", AverageSize: 3, Delay: 100 * time.Microsecond}
	heal := mustInject(t, f, tg)
	msg := []byte("a message cut into tiny slices")
	if got, err := echo(t, tg, msg, len(msg)); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through slicer: %q, %v", got, err)
	}
	mustHeal(t, heal)
	if !f.Evidence().Effective {
		t.Errorf("slicer saw no traffic: %+v", f.Evidence())
	}
}

func TestLimitDataCutsStream(t *testing.T) {
	tg, n := setup(t)
	heal := mustInject(t, &network.LimitData{Net: n, Link: "kv/0", Bytes: 10}, tg)
	msg := bytes.Repeat([]byte("y"), 100)
	got, err := echo(t, tg, msg, len(msg))
	if err == nil || len(got) != 10 {
		t.Fatalf("echo through limit_data: %d bytes, %v; want 10 bytes then the end", len(got), err)
	}
	mustHeal(t, heal)
	if got, err := echo(t, tg, msg, len(msg)); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo after heal: %d bytes, %v", len(got), err)
	}
}

func TestLinkDownRefusesAndCuts(t *testing.T) {
	tg, n := setup(t)
	// An open connection through the proxy, cut when the link goes down.
	warm := mustInject(t, &network.Latency{Net: n, Link: "kv/0", Delay: time.Millisecond}, tg)
	mustHeal(t, warm)
	open, err := tg.Dial(context.Background(), "kv/0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(open, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}

	f := &network.LinkDown{Net: n, Link: "kv/0"}
	heal := mustInject(t, f, tg)
	if _, err := echo(t, tg, []byte("x"), 1); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down: %v, want connection refused", err)
	}
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Fatal("open connection survived link down")
	}
	mustHeal(t, heal)
	if got, err := echo(t, tg, []byte("back"), 4); err != nil || string(got) != "back" {
		t.Fatalf("echo after heal: %q, %v", got, err)
	}
	if ev := f.Evidence(); !ev.Effective || ev.Counters["connections_cut"] != 1 {
		t.Errorf("evidence %+v: want 1 connection cut", ev)
	}
}

func TestNoTrafficIsNotEffective(t *testing.T) {
	tg, n := setup(t)
	f := &network.Latency{Net: n, Link: "kv/0", Delay: 10 * time.Millisecond}
	mustHeal(t, mustInject(t, f, tg))
	if ev := f.Evidence(); ev.Effective {
		t.Errorf("latency with no traffic reported effective: %+v", ev)
	}
	d := &network.LinkDown{Net: n, Link: "kv/0"}
	mustHeal(t, mustInject(t, d, tg))
	if ev := d.Evidence(); ev.Effective {
		t.Errorf("link down with no connection reported effective: %+v", ev)
	}
}

func TestValidationAppliesNothing(t *testing.T) {
	tg, n := setup(t)
	cases := []struct {
		name  string
		fault faults.Fault
		want  []string
		unsup bool
	}{
		{"unknown link", &network.Latency{Net: n, Link: "nope", Delay: time.Second}, []string{`"nope"`, "http", "kv/0"}, true},
		{"negative latency", &network.Latency{Net: n, Link: "kv/0", Delay: -time.Second}, []string{"Delay"}, false},
		{"zero bandwidth", &network.Bandwidth{Net: n, Link: "kv/0"}, []string{"RateKB"}, false},
		{"zero limit", &network.LimitData{Net: n, Link: "kv/0"}, []string{"Bytes"}, false},
		{"zero slice", &network.Slicer{Net: n, Link: "kv/0"}, []string{"AverageSize"}, false},
		{"bad stream", &network.Timeout{Net: n, Link: "kv/0", Stream: "sideways"}, []string{"Stream"}, false},
		{"no network", &network.LinkDown{Link: "kv/0"}, []string{"Net"}, false},
		{"down unknown", &network.LinkDown{Net: n, Link: "kv/9"}, []string{"kv/9", "http"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			heal, err := tc.fault.Inject(context.Background(), tg)
			if err == nil || heal != nil {
				t.Fatalf("inject: heal %v, err %v; want an error and no heal", heal != nil, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if errors.Is(err, contract.ErrUnsupported) != tc.unsup {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v", err, !tc.unsup)
			}
		})
	}
	if p := n.Proxies(); len(p) != 0 {
		t.Errorf("proxies after failed injections: %v", p)
	}
	if i := tg.Interposed(); len(i) != 0 {
		t.Errorf("links interposed after failed injections: %v", i)
	}
}

func TestCloseHealsEverythingWithoutLeaks(t *testing.T) {
	testkit.NoLeaks(t)
	tg := faketarget.New(faketarget.HTTPLink(t, "http", "hello"), faketarget.EchoLink(t, "kv/0"))
	n := network.New()
	mustInject(t, &network.Latency{Net: n, Link: "http", Delay: 5 * time.Millisecond}, tg)
	mustInject(t, &network.Timeout{Net: n, Link: "kv/0"}, tg)
	mustInject(t, &network.LinkDown{Net: n, Link: "kv/0"}, tg)
	if _, _, err := get(t, tg); err != nil {
		t.Fatalf("get through latency: %v", err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if p := n.Proxies(); len(p) != 0 {
		t.Errorf("proxies after close: %v", p)
	}
	if i := tg.Interposed(); len(i) != 0 {
		t.Errorf("links interposed after close: %v", i)
	}
	if got, err := echo(t, tg, []byte("direct"), 6); err != nil || string(got) != "direct" {
		t.Fatalf("echo after close: %q, %v", got, err)
	}
	if _, err := (&network.Latency{Net: n, Link: "kv/0", Delay: time.Second}).Inject(context.Background(), tg); !errors.Is(err, network.ErrClosed) {
		t.Errorf("inject after close: %v, want ErrClosed", err)
	}
	tg.CloseIdle()
}
