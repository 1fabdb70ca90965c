package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// ErrClosed is returned by an injection after Network.Close.
var ErrClosed = errors.New("network injector closed")

// Network owns one embedded Toxiproxy server and the proxies it put in front
// of a target's links. One Network serves every network fault of a run
// against one target, so faults on the same link share its proxy; Close
// heals everything it did.
type Network struct {
	srv *toxiproxy.ApiServer

	mu     sync.Mutex
	links  map[string]*linkProxy
	seq    int
	closed bool
}

// linkProxy is the proxy and counting relay in front of one link.
type linkProxy struct {
	name    string
	listen  string
	proxy   *toxiproxy.Proxy
	meter   *meter
	restore contract.Restore
	downs   int // active LinkDown injections; the proxy is stopped while > 0
}

// New returns a Network with its own in-process Toxiproxy server. It opens
// no socket until a fault is injected.
func New() *Network {
	return &Network{
		srv:   toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		links: map[string]*linkProxy{},
	}
}

// Proxies returns each link that has a proxy in front of it, mapped to the
// proxy's address; empty after Close.
func (n *Network) Proxies() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]string{}
	for name, lp := range n.links {
		out[name] = lp.listen
	}
	return out
}

// Toxics returns the names of the toxics active on each proxied link, so a
// test or a teardown check can show nothing was left behind.
func (n *Network) Toxics() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string][]string{}
	for name, lp := range n.links {
		for _, t := range lp.proxy.Toxics.GetToxicArray() {
			out[name] = append(out[name], toxicName(t))
		}
	}
	return out
}

func toxicName(t toxics.Toxic) string {
	if w, ok := t.(*toxics.ToxicWrapper); ok {
		return w.Name
	}
	return fmt.Sprintf("%T", t)
}

// Close removes every toxic, brings every link up, gives each link back to
// the target (Restore), stops every proxy and relay and waits for their
// goroutines. Heals of earlier injections become no-ops. Calling it twice is
// safe.
func (n *Network) Close(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(n.links)) {
		lp := n.links[name]
		lp.proxy.Toxics.ResetToxics(ctx)
		if err := lp.restore(ctx); err != nil {
			errs = append(errs, fmt.Errorf("restore link %s: %w", name, err))
		}
	}
	if err := n.srv.Collection.Clear(); err != nil {
		errs = append(errs, fmt.Errorf("clear proxies: %w", err))
	}
	for _, lp := range n.links {
		lp.meter.close()
	}
	clear(n.links)
	return errors.Join(errs...)
}

// findLink returns the target's link or an ErrUnsupported error listing the
// valid links.
func findLink(t faults.Target, name string) (contract.Link, error) {
	links := t.Links()
	names := make([]string, 0, len(links))
	for _, l := range links {
		if l.Name == name {
			return l, nil
		}
		names = append(names, l.Name)
	}
	return contract.Link{}, fmt.Errorf("no link %q (valid: %s): %w", name, strings.Join(names, ", "), contract.ErrUnsupported)
}

// proxyFor returns the link's proxy, creating and interposing it on first
// use. On error nothing is left behind. Called with n.mu held.
func (n *Network) proxyFor(ctx context.Context, t faults.Target, link string) (*linkProxy, error) {
	if n.closed {
		return nil, ErrClosed
	}
	if lp := n.links[link]; lp != nil {
		return lp, nil
	}
	l, err := findLink(t, link)
	if err != nil {
		return nil, err
	}
	m, err := startMeter(l.Addr)
	if err != nil {
		return nil, fmt.Errorf("start relay: %w", err)
	}
	p := toxiproxy.NewProxy(n.srv, link, "127.0.0.1:0", m.addr())
	if err := n.srv.Collection.Add(p, true); err != nil {
		m.close()
		return nil, fmt.Errorf("start proxy: %w", err)
	}
	lp := &linkProxy{name: link, listen: p.Listen, proxy: p, meter: m}
	restore, err := t.Interpose(ctx, link, lp.listen)
	if err != nil {
		_ = n.srv.Collection.Remove(link)
		m.close()
		return nil, fmt.Errorf("interpose: %w", err)
	}
	lp.restore = restore
	n.links[link] = lp
	return lp, nil
}

// toxic is one toxic to add: what the fault structs build.
type toxic struct {
	link   string
	stream Stream
	typ    string
	attrs  map[string]any
}

// addToxic puts a toxic on the link and returns its heal, which removes it
// and adds what the relay saw meanwhile to rec.
func (n *Network) addToxic(ctx context.Context, t faults.Target, name string, tx toxic, rec *recorder) (faults.Heal, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	lp, err := n.proxyFor(ctx, t, tx.link)
	if err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, tx.link, err)
	}
	n.seq++
	tname := fmt.Sprintf("%s#%d", tx.typ, n.seq)
	body, err := json.Marshal(map[string]any{
		"name": tname, "type": tx.typ, "stream": tx.stream.String(), "toxicity": 1.0, "attributes": tx.attrs,
	})
	if err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, tx.link, err)
	}
	before := lp.meter.snapshot()
	if _, err := lp.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, tx.link, err)
	}
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.closed || n.links[tx.link] != lp {
				rec.addWindow(lp.meter.snapshot().sub(before), 0)
				return
			}
			if rerr := lp.proxy.Toxics.RemoveToxic(ctx, tname); rerr != nil {
				err = fmt.Errorf("heal %s on link %s: %w", name, tx.link, rerr)
			}
			rec.addWindow(lp.meter.snapshot().sub(before), 0)
		})
		return err
	}, nil
}

// addReset arms a reset rule on the link's relay; its heal disarms it and
// records the connections reset meanwhile.
func (n *Network) addReset(ctx context.Context, t faults.Target, name, link string, rule *resetRule, rec *recorder) (faults.Heal, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	lp, err := n.proxyFor(ctx, t, link)
	if err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, link, err)
	}
	if !lp.meter.rule.CompareAndSwap(nil, rule) {
		return nil, fmt.Errorf("inject %s on link %s: a reset is already active there", name, link)
	}
	before := lp.meter.snapshot()
	resetsBefore := lp.meter.resets.Load()
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			lp.meter.rule.CompareAndSwap(rule, nil)
			rec.addWindow(lp.meter.snapshot().sub(before), lp.meter.resets.Load()-resetsBefore)
		})
		return nil
	}, nil
}

// down stops the link's proxy so dials are refused and open connections
// are cut; its heal starts the proxy again on the same address.
func (n *Network) down(ctx context.Context, t faults.Target, name, link string, rec *recorder) (faults.Heal, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	lp, err := n.proxyFor(ctx, t, link)
	if err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, link, err)
	}
	before := lp.meter.snapshot()
	lp.downs++
	var cut int64
	if lp.downs == 1 {
		cut = before.active
		lp.proxy.Stop()
	}
	var once sync.Once
	return func(context.Context) error {
		var err error
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.closed || n.links[link] != lp {
				rec.addWindow(counts{}, cut)
				return
			}
			lp.downs--
			if lp.downs == 0 {
				if serr := lp.proxy.Start(); serr != nil {
					err = fmt.Errorf("heal %s on link %s: %w", name, link, serr)
				}
			}
			rec.addWindow(counts{}, cut)
		})
		return err
	}, nil
}
