package faketarget

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

var _ faults.Target = (*Target)(nil)

// Target is a fake deployment: named links to real loopback servers. Its
// clients dial through Dial or HTTPClient, which send new connections to the
// interposed address, as a real engine would after Interpose.
type Target struct {
	// Hook is returned by Hooks; nil means the target has no hooks.
	Hook contract.Hooks
	// Procs is returned by Processes; nil means no process control.
	Procs contract.Processes

	mu    sync.Mutex
	links []contract.Link
	via   map[string]string
	conns map[string]map[net.Conn]struct{}
	trs   map[string]*http.Transport
}

// New returns a target with the given links.
func New(links ...contract.Link) *Target {
	return &Target{
		links: links,
		via:   map[string]string{},
		conns: map[string]map[net.Conn]struct{}{},
		trs:   map[string]*http.Transport{},
	}
}

// Links lists the links.
func (t *Target) Links() []contract.Link { return append([]contract.Link(nil), t.links...) }

// Hooks returns Hook or ErrUnsupported.
func (t *Target) Hooks() (contract.Hooks, error) {
	if t.Hook == nil {
		return nil, fmt.Errorf("hooks: %w", contract.ErrUnsupported)
	}
	return t.Hook, nil
}

// Processes returns Procs or ErrUnsupported.
func (t *Target) Processes() (contract.Processes, error) {
	if t.Procs == nil {
		return nil, fmt.Errorf("processes: %w", contract.ErrUnsupported)
	}
	return t.Procs, nil
}

func (t *Target) link(name string) (contract.Link, error) {
	for _, l := range t.links {
		if l.Name == name {
			return l, nil
		}
	}
	return contract.Link{}, fmt.Errorf("link %s: %w", name, contract.ErrUnsupported)
}

// Interpose sends new connections on link to via and drops existing ones.
func (t *Target) Interpose(ctx context.Context, link, via string) (contract.Restore, error) {
	if _, err := t.link(link); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.via[link] = via
	t.mu.Unlock()
	t.drop(link)
	return func(context.Context) error {
		t.mu.Lock()
		if t.via[link] == via {
			delete(t.via, link)
		}
		t.mu.Unlock()
		t.drop(link)
		return nil
	}, nil
}

// Interposed returns the links currently sent through a proxy.
func (t *Target) Interposed() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for k, v := range t.via {
		out[k] = v
	}
	return out
}

func (t *Target) drop(link string) {
	t.mu.Lock()
	conns := t.conns[link]
	t.conns[link] = nil
	tr := t.trs[link]
	t.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	if tr != nil {
		tr.CloseIdleConnections()
	}
}

// Addr is where a new connection on link goes now.
func (t *Target) Addr(link string) (string, error) {
	l, err := t.link(link)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.via[link]; ok {
		return v, nil
	}
	return l.Addr, nil
}

// Dial opens a connection on link, through the proxy if one is interposed.
func (t *Target) Dial(ctx context.Context, link string) (net.Conn, error) {
	addr, err := t.Addr(link)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c}
	tc.release = func() {
		t.mu.Lock()
		delete(t.conns[link], tc)
		t.mu.Unlock()
	}
	t.mu.Lock()
	if t.conns[link] == nil {
		t.conns[link] = map[net.Conn]struct{}{}
	}
	t.conns[link][tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// HTTPClient returns a client whose connections all go over link; the URL
// host is ignored. Close it with CloseIdle when done.
func (t *Target) HTTPClient(link string) *http.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.trs[link]
	if tr == nil {
		tr = &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return t.Dial(ctx, link)
			},
			DisableCompression: true,
		}
		t.trs[link] = tr
	}
	return &http.Client{Transport: tr}
}

// CloseIdle closes the idle connections of every HTTP client, for leak checks.
func (t *Target) CloseIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.trs {
		tr.CloseIdleConnections()
	}
}

type trackedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
