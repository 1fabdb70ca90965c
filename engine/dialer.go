package engine

import (
	"context"
	"net"
	"sync"
)

// linkTable maps a link's real address to the proxy a fault put in front of
// it. Every dial an engine role makes goes through it, so Interpose can
// reroute a link while the cluster runs. gen changes on every reroute so
// connection caches know to redial.
type linkTable struct {
	mu        sync.Mutex
	redirects map[string]string
	gen       uint64
	onChange  []func()
}

func newLinkTable() *linkTable { return &linkTable{redirects: map[string]string{}} }

// resolve returns where to dial for addr, and the table generation.
func (t *linkTable) resolve(addr string) (string, uint64) {
	if t == nil {
		return addr, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if via, ok := t.redirects[addr]; ok {
		return via, t.gen
	}
	return addr, t.gen
}

func (t *linkTable) generation() uint64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

func (t *linkTable) set(addr, via string) {
	t.mu.Lock()
	if via == "" {
		delete(t.redirects, addr)
	} else {
		t.redirects[addr] = via
	}
	t.gen++
	hooks := append([]func(){}, t.onChange...)
	t.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// watch registers f to run after every reroute (e.g. to close idle HTTP
// connections).
func (t *linkTable) watch(f func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.onChange = append(t.onChange, f)
	t.mu.Unlock()
}

// dial connects to addr, or to the proxy in front of it.
func (t *linkTable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	target, _ := t.resolve(addr)
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}
