package target

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/protocol"
)

// fakeBootstrap answers /route like a one-rank prefill whose control
// socket is at rank.
func fakeBootstrap(t *testing.T, rank string) *httptest.Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(rank)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("target_tp_rank") == "-1" {
			_ = json.NewEncoder(w).Encode(map[string]int{"attn_tp_size": 1, "dp_size": 1})
			return
		}
		_, _ = w.Write([]byte(`{"rank_ip":"` + host + `","rank_port":` + port + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestExternalAttachWithoutDecode: the hops come up from the topology and
// list their links, Interpose redirects them, and when decode never looks
// prefill up through the rewriter Close says so and names the router flag.
func TestExternalAttachWithoutDecode(t *testing.T) {
	boot := fakeBootstrap(t, "127.0.0.1:7")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := &External{Router: "http://127.0.0.1:1", Metrics: []string{"http://127.0.0.1:1/metrics"}, Bootstrap: boot.URL, RouteListener: ln, Log: &log}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := e.Attach(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range e.Links() {
		names = append(names, l.Name+"="+string(l.Kind))
	}
	if got := strings.Join(names, " "); got != "bootstrap=http control/0=zmtp notify/0=zmtp" {
		t.Fatalf("links %q", got)
	}
	restore, err := e.Interpose(t.Context(), contract.ControlLink(0), "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Interpose(t.Context(), "kv/0", "127.0.0.1:9"); !errors.Is(err, contract.ErrUnsupported) {
		t.Fatalf("interpose on kv/0: %v, want unsupported (RDMA on SGLang)", err)
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	for _, want := range []string{"1 prefill rank(s)", "control/0: decode has not looked prefill up", "decode never looked prefill up", "start the router with --prefill <prefill URL> "} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if e.Links() != nil {
		t.Error("links listed after Close")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the rewriter still listens after Close")
	}
}

// TestExternalBootstrapRefused: bad input is refused with the field named,
// and without --bootstrap Interpose says what to give.
func TestExternalBootstrapRefused(t *testing.T) {
	base := External{Router: "http://127.0.0.1:1", Metrics: []string{"http://127.0.0.1:1/metrics"}}
	for _, tc := range []struct {
		name string
		edit func(*External)
		want string
	}{
		{"not a URL", func(e *External) { e.Bootstrap = "127.0.0.1:8998" }, "field bootstrap"},
		{"remote rewriter", func(e *External) { e.Bootstrap = "http://127.0.0.1:8998"; e.RouteListen = "0.0.0.0:9998" }, "field route_listen"},
		{"bootstrap on another host", func(e *External) { e.Bootstrap = "http://10.0.0.7:8998" }, "run pdchaos on the deployment's host"},
	} {
		e := base
		tc.edit(&e)
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	e := base
	if _, err := e.Interpose(t.Context(), contract.ControlLink(0), "127.0.0.1:9"); !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), "--bootstrap") {
		t.Fatalf("interpose without a bootstrap: %v", err)
	}
	dead := base
	dead.Bootstrap = "http://127.0.0.1:1"
	if err := dead.Attach(t.Context()); err == nil || !strings.Contains(err.Error(), "prefill topology") {
		t.Fatalf("attach to a dead bootstrap server: %v", err)
	}
}

// TestInterposerBoundsDecodeAddrs: each decode address gets its own notify
// hop, the same address the same hop, and one past MaxDecodeAddrs is
// refused as not rewritable rather than given a wrong address.
func TestInterposerBoundsDecodeAddrs(t *testing.T) {
	boot := fakeBootstrap(t, "127.0.0.1:7")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &External{Router: "http://127.0.0.1:1", Metrics: []string{"http://127.0.0.1:1/metrics"}, Bootstrap: boot.URL, RouteListener: ln}
	if err := e.Attach(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(t.Context()); err != nil {
			t.Error(err)
		}
	}()
	seen := map[string]bool{}
	for i := range MaxDecodeAddrs {
		via, err := e.ip.notifyFor(net.JoinHostPort("10.0.0.2", strconv.Itoa(17000+i)))
		if err != nil {
			t.Fatalf("decode address %d: %v", i, err)
		}
		if seen[via] {
			t.Fatalf("decode address %d shares hop %s", i, via)
		}
		seen[via] = true
	}
	if again, _ := e.ip.notifyFor("10.0.0.2:17000"); !seen[again] {
		t.Fatalf("a known decode address got a new hop %s", again)
	}
	if _, err := e.ip.notifyFor("10.0.0.3:17000"); !errors.Is(err, protocol.ErrNotRewritable) {
		t.Fatalf("address %d: %v, want ErrNotRewritable", MaxDecodeAddrs+1, err)
	}
	if n := len(e.Links()); n != 2+MaxDecodeAddrs {
		t.Fatalf("%d links, want bootstrap, control/0 and %d notify links", n, MaxDecodeAddrs)
	}
}

// TestExternalReattachKeepsAddresses: a soak's next run listens on the
// same rewriter, control and notify addresses, and a decode address keeps
// its notify hop, because decode and prefill cache them.
func TestExternalReattachKeepsAddresses(t *testing.T) {
	boot := fakeBootstrap(t, "127.0.0.1:7")
	e := &External{Router: "http://127.0.0.1:1", Metrics: []string{"http://127.0.0.1:1/metrics"}, Bootstrap: boot.URL, RouteListen: "127.0.0.1:0"}
	attach := func() (route string, links []contract.Link, via, control string) {
		t.Helper()
		if err := e.Attach(t.Context()); err != nil {
			t.Fatal(err)
		}
		v, err := e.ip.notifyFor("10.0.0.2:17000")
		if err != nil {
			t.Fatal(err)
		}
		return e.ip.ln.Addr().String(), e.Links(), v, e.ip.control[0].Addr()
	}
	r1, l1, v1, c1 := attach()
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	r2, l2, v2, c2 := attach()
	defer e.Close(t.Context())
	if r1 != r2 || v1 != v2 || c1 != c2 {
		t.Fatalf("rewriter %s then %s, control hop %s then %s, notify hop %s then %s: want the same", r1, r2, c1, c2, v1, v2)
	}
	for i := range l1 {
		if l1[i] != l2[i] {
			t.Fatalf("link %s moved: %+v then %+v", l1[i].Name, l1[i], l2[i])
		}
	}
}
