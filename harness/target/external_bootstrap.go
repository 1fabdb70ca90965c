package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/protocol"
)

// MaxDecodeAddrs bounds the decode notify addresses an interposed external
// target gives proxies of its own; a message naming one more is relayed
// with its address untouched and counted as unrewritten.
const MaxDecodeAddrs = 64

// DefaultRouteListen is where the /route rewriter listens when
// External.RouteListen is empty: the bootstrap port SGLang uses (8998)
// plus 1000, so the router line reads --prefill URL 9998.
const DefaultRouteListen = "127.0.0.1:9998"

// LinkNotify names the prefill→decode notify link (status, ABORT_ACK,
// KV_STATUS) of the i-th decode address an interposed target has seen.
func LinkNotify(i int) string { return contract.NotifyLink(i) }

// interposer is pdchaos's own hops between an external deployment's decode
// and prefill, started from --bootstrap: a /route rewriter that answers
// decode's lookups with one Front per prefill rank; each Front rewrites the
// decode address inside registrations, TransferInfos and ABORTs to a
// notify Front of pdchaos's, so both directions of the control link pass
// through hops that Interpose can redirect to a fault proxy.
type interposer struct {
	ctx       context.Context // bounds binds of slots started later; never cancelled
	log       io.Writer
	bootstrap string // host:port of the real bootstrap server
	rr        *protocol.RouteRewriter
	srv       *http.Server
	ln        net.Listener
	srvDone   chan struct{}
	ranks     []protocol.RankRoute
	control   []*protocol.Front

	slotMu sync.Mutex // serialises addSlot
	mu     sync.Mutex
	notify []notifySlot
	slotOf map[string]int // decode notify addr -> slot
	mem    *interposeMemory
}

// notifySlot is one decode notify address's pair of Fronts: front is the
// address written into frames (prefill PUSHes there; Interpose redirects
// it), back is the fixed link address a fault proxy forwards to, bound to
// the decode address once it is seen.
type notifySlot struct {
	front, back *protocol.Front
	decode      string
}

// interposeMemory keeps the addresses an interposer listened on and the
// decode slots it bound, so the next run of a soak listens on the same
// ones: decode and prefill cache them (/route answers, notify sockets).
type interposeMemory struct {
	mu     sync.Mutex
	listen map[string]string // hop name -> host:port
	slotOf map[string]int
}

func (m *interposeMemory) addr(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.listen[name]; ok {
		return a
	}
	return "127.0.0.1:0"
}

func (m *interposeMemory) keep(name, addr string) {
	m.mu.Lock()
	m.listen[name] = addr
	m.mu.Unlock()
}

// startInterposer reads the prefill topology from bootstrap and starts the
// rewriter (on ln, or listen), the control Fronts and the notify slots.
// On error nothing is left running.
func startInterposer(ctx context.Context, bootstrap, listen string, ln net.Listener, mem *interposeMemory, log io.Writer) (ip *interposer, err error) {
	u, err := url.Parse(strings.TrimRight(bootstrap, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("external target: field bootstrap: %q is not an http(s) URL of prefill's bootstrap server", bootstrap)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	ranks, err := protocol.FetchRanks(ctx, client, u.String())
	if err != nil {
		return nil, fmt.Errorf("interpose the control links from %s: %w", bootstrap, err)
	}
	ip = &interposer{ctx: context.WithoutCancel(ctx), log: log, bootstrap: u.Host, ranks: ranks, slotOf: map[string]int{}, mem: mem, srvDone: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = ip.close(context.WithoutCancel(ctx))
			ip = nil
		}
	}()
	ip.rr = protocol.NewRouteRewriter(u)
	for i, r := range ranks {
		name := contract.ControlLink(i)
		f, err := ip.listenFront(ctx, name, protocol.FrontOptions{Upstream: r.Addr, Rewrite: ip.rewrite})
		if err != nil {
			return nil, err
		}
		ip.control = append(ip.control, f)
		ip.rr.Map(r.Addr, f.Addr())
	}
	// One notify slot per prefill rank from the start, so notify/0… exist
	// as links before decode has sent anything; more are bound as seen.
	for range ranks {
		if _, err := ip.addSlot(ctx); err != nil {
			return nil, err
		}
	}
	mem.mu.Lock()
	prior := make(map[string]int, len(mem.slotOf))
	for a, i := range mem.slotOf {
		prior[a] = i
	}
	mem.mu.Unlock()
	for a, i := range prior {
		for len(ip.notify) <= i {
			if _, err := ip.addSlot(ctx); err != nil {
				return nil, err
			}
		}
		ip.mu.Lock()
		ip.bindLocked(i, a)
		ip.mu.Unlock()
	}
	if ln == nil {
		if listen == "" {
			listen = DefaultRouteListen
		}
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", listen); err != nil {
			return nil, fmt.Errorf("listen /route rewriter on %s: %w", listen, err)
		}
	}
	ip.ln = ln
	ip.srv = &http.Server{Handler: ip.rr, ReadHeaderTimeout: 10 * time.Second}
	go func() { // owned by ip: close shuts it down and waits
		defer close(ip.srvDone)
		_ = ip.srv.Serve(ln)
	}()
	return ip, nil
}

// listenFront binds a Front on the address this hop had before, if any.
func (ip *interposer) listenFront(ctx context.Context, name string, opts protocol.FrontOptions) (*protocol.Front, error) {
	opts.Listen = ip.mem.addr(name)
	f, err := protocol.ListenFront(ctx, opts)
	if err != nil && opts.Listen != "127.0.0.1:0" {
		fmt.Fprintf(ip.log, "interpose: %s could not listen on %s again (%v); a new port: restart decode if it cached the old one\n", name, opts.Listen, err)
		opts.Listen = ""
		f, err = protocol.ListenFront(ctx, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("interpose %s: %w", name, err)
	}
	ip.mem.keep(name, f.Addr())
	return f, nil
}

// addSlot starts one unbound notify slot; slotMu serialises it, so two
// new decode addresses at once get two slots with their own names.
func (ip *interposer) addSlot(ctx context.Context) (int, error) {
	ip.slotMu.Lock()
	defer ip.slotMu.Unlock()
	ip.mu.Lock()
	i := len(ip.notify)
	ip.mu.Unlock()
	if i >= MaxDecodeAddrs {
		return 0, fmt.Errorf("%w: over %d decode addresses", protocol.ErrNotRewritable, MaxDecodeAddrs)
	}
	back, err := ip.listenFront(ctx, LinkNotify(i)+"/back", protocol.FrontOptions{})
	if err != nil {
		return 0, err
	}
	front, err := ip.listenFront(ctx, LinkNotify(i), protocol.FrontOptions{Upstream: back.Addr()})
	if err != nil {
		_ = back.Close()
		return 0, err
	}
	ip.mu.Lock()
	ip.notify = append(ip.notify, notifySlot{front: front, back: back})
	ip.mu.Unlock()
	return i, nil
}

// bindLocked gives slot i to decode address addr. Caller holds ip.mu.
func (ip *interposer) bindLocked(i int, addr string) {
	ip.notify[i].decode = addr
	ip.notify[i].back.SetUpstream(addr)
	ip.slotOf[addr] = i
	ip.mem.mu.Lock()
	ip.mem.slotOf[addr] = i
	ip.mem.mu.Unlock()
}

// rewrite is every control Front's Rewrite: decode's notify address in a
// registration, TransferInfo or ABORT becomes its slot's front.
func (ip *interposer) rewrite(m protocol.Message) ([][]byte, bool, error) {
	return protocol.RewriteDecodeAddr(m, ip.notifyFor)
}

// notifyFor returns the notify front for a decode address, binding a free
// slot (or starting one, up to MaxDecodeAddrs) the first time it is seen.
// Finding and binding happen under one lock, so an address gets one slot.
func (ip *interposer) notifyFor(addr string) (string, error) {
	for {
		ip.mu.Lock()
		if i, ok := ip.slotOf[addr]; ok {
			a := ip.notify[i].front.Addr()
			ip.mu.Unlock()
			return a, nil
		}
		for i, s := range ip.notify {
			if s.decode == "" {
				ip.bindLocked(i, addr)
				a := s.front.Addr()
				ip.mu.Unlock()
				return a, nil
			}
		}
		ip.mu.Unlock()
		if _, err := ip.addSlot(ip.ctx); err != nil {
			return "", err
		}
	}
}

// links lists bootstrap, control/i per prefill rank and notify/i per slot.
func (ip *interposer) links() []contract.Link {
	out := []contract.Link{{Name: contract.LinkBootstrap, From: "decode", To: "prefill", Kind: contract.LinkHTTP, Addr: ip.bootstrap}}
	for i, r := range ip.ranks {
		out = append(out, contract.Link{Name: contract.ControlLink(i), From: "decode", To: "prefill", Kind: contract.LinkZMTP, Addr: r.Addr})
	}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	for i, s := range ip.notify {
		out = append(out, contract.Link{Name: LinkNotify(i), From: "prefill", To: "decode", Kind: contract.LinkZMTP, Addr: s.back.Addr()})
	}
	return out
}

// interpose redirects the named hop to via; restore sends it straight
// again. Live ZMTP connections move between messages (Front), so nothing
// is lost and the peers do not reconnect.
func (ip *interposer) interpose(name, via string) (contract.Restore, error) {
	var redirect func(string)
	switch {
	case name == contract.LinkBootstrap:
		redirect = ip.rr.Redirect
	default:
		for i, f := range ip.control {
			if name == contract.ControlLink(i) {
				redirect = f.Redirect
			}
		}
		ip.mu.Lock()
		for i, s := range ip.notify {
			if name == LinkNotify(i) {
				redirect = s.front.Redirect
			}
		}
		ip.mu.Unlock()
	}
	if redirect == nil {
		var names []string
		for _, l := range ip.links() {
			names = append(names, l.Name)
		}
		return nil, fmt.Errorf("interpose on link %q: %w: no such link (links: %s)", name, contract.ErrUnsupported, strings.Join(names, ", "))
	}
	if !ip.report().Reached() {
		// Said at once, not only at Close: a fault on a link decode
		// bypasses cannot act, and the user can still fix the router.
		fmt.Fprintf(ip.log, "interpose: %s: decode has not looked prefill up through the /route rewriter yet; if it never does, %s\n", name, ip.routerHint())
	}
	redirect(via)
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() { redirect("") })
		return nil
	}, nil
}

// InterposeReport says whether decode really went through pdchaos's hops.
type InterposeReport struct {
	Route   protocol.RouteStats `json:"route"`
	Control protocol.FrontStats `json:"control"`
	Notify  protocol.FrontStats `json:"notify"`
	// Decodes lists the decode notify addresses seen, by slot.
	Decodes []string `json:"decodes,omitempty"`
}

// Reached is true once decode looked a rank up through the rewriter or
// connected to a control Front.
func (r InterposeReport) Reached() bool { return r.Route.RankLookups > 0 || r.Control.Conns > 0 }

func (ip *interposer) report() InterposeReport {
	rep := InterposeReport{Route: ip.rr.Stats()}
	for _, f := range ip.control {
		rep.Control = addFront(rep.Control, f.Stats())
	}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	for _, s := range ip.notify {
		rep.Notify = addFront(rep.Notify, s.front.Stats())
		if s.decode != "" {
			rep.Decodes = append(rep.Decodes, s.decode)
		}
	}
	return rep
}

func addFront(a, b protocol.FrontStats) protocol.FrontStats {
	a.Conns += b.Conns
	a.Messages += b.Messages
	a.Unknown += b.Unknown
	a.Rewritten += b.Rewritten
	a.Unrewritten += b.Unrewritten
	a.Spliced += b.Spliced
	a.Failed += b.Failed
	return a
}

// routerHint is the one flag that points decode at the rewriter: SGLang's
// router passes prefill's bootstrap port to decode with every request.
func (ip *interposer) routerHint() string {
	_, port, _ := net.SplitHostPort(ip.ln.Addr().String())
	return fmt.Sprintf("start the router with --prefill <prefill URL> %s (the bootstrap port of the pdchaos /route rewriter on %s, in place of prefill's own)", port, ip.ln.Addr())
}

// close stops the rewriter and every Front.
func (ip *interposer) close(ctx context.Context) error {
	var errs []error
	if ip.srv != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := ip.srv.Shutdown(sctx); err != nil {
			_ = ip.srv.Close()
		}
		cancel()
		<-ip.srvDone
	}
	if ip.rr != nil {
		ip.rr.Close()
	}
	for _, f := range ip.control {
		errs = append(errs, f.Close())
	}
	ip.mu.Lock()
	slots := ip.notify
	ip.mu.Unlock()
	for _, s := range slots {
		errs = append(errs, s.front.Close(), s.back.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close interposed hops: %w", err)
	}
	return nil
}
