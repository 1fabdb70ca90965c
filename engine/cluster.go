package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Cluster is the whole bundled engine in one process: a router, one
// prefill and one decode, talking over real loopback TCP. It is the default
// target for tests and `make run`.
type Cluster struct {
	cfg     contract.EngineConfig
	links   *linkTable
	Prefill *Prefill
	Decode  *Decode
	Router  *Router

	mu       sync.Mutex
	endpoint string
}

// StartCluster starts router, prefill and decode on OS-chosen loopback ports.
func StartCluster(ctx context.Context, cfg contract.EngineConfig, log *slog.Logger) (*Cluster, error) {
	if _, _, err := cfg.Resolve(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	c := &Cluster{cfg: cfg, links: newLinkTable()}
	clock := newSteadyClock(0) // one for both roles: their records share a time line
	var err error
	if c.Prefill, err = startPrefill(ctx, cfg, PrefillAddrs{}, c.links, clock, log); err != nil {
		return nil, err
	}
	if c.Decode, err = startDecode(ctx, cfg, DecodeAddrs{}, c.links, clock, log); err != nil {
		_ = c.Close(ctx)
		return nil, err
	}
	pa, da := c.Prefill.Addrs(), c.Decode.Addrs()
	if c.Router, err = startRouter(ctx, cfg, RouterConfig{PrefillHTTP: pa.HTTP, DecodeHTTP: da.HTTP, PrefillBootstrap: pa.Bootstrap}, c.links, log); err != nil {
		_ = c.Close(ctx)
		return nil, err
	}
	c.endpoint = "http://" + c.Router.Addr()
	return c, nil
}

// Endpoint is the URL clients use: the router, or a proxy interposed on
// the client-router link.
func (c *Cluster) Endpoint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endpoint
}

// MetricsURLs lists each engine's /metrics.
func (c *Cluster) MetricsURLs() []string {
	return []string{"http://" + c.Prefill.Addrs().HTTP + contract.PathMetrics, "http://" + c.Decode.Addrs().HTTP + contract.PathMetrics}
}

// EngineURLs lists each engine's base URL (for /debug/rooms and /health).
func (c *Cluster) EngineURLs() []string {
	return []string{"http://" + c.Prefill.Addrs().HTTP, "http://" + c.Decode.Addrs().HTTP}
}

// Links lists the cluster's named TCP hops.
func (c *Cluster) Links() []contract.Link {
	pa, da := c.Prefill.Addrs(), c.Decode.Addrs()
	links := []contract.Link{
		{Name: contract.LinkClientRouter, From: "client", To: "router", Kind: contract.LinkHTTP, Addr: c.Router.Addr()},
		{Name: "router-prefill", From: "router", To: "prefill", Kind: contract.LinkHTTP, Addr: pa.HTTP},
		{Name: "router-decode", From: "router", To: "decode", Kind: contract.LinkHTTP, Addr: da.HTTP},
		{Name: "bootstrap", From: "decode", To: "prefill", Kind: contract.LinkHTTP, Addr: pa.Bootstrap},
	}
	for r := range pa.Control {
		links = append(links,
			contract.Link{Name: fmt.Sprintf("control/%d", r), From: "decode", To: "prefill", Kind: contract.LinkZMTP, Addr: pa.Control[r]},
			contract.Link{Name: contract.NotifyLink(r), From: "prefill", To: "decode", Kind: contract.LinkZMTP, Addr: da.Notify[r]},
			contract.Link{Name: fmt.Sprintf("kv/%d", r), From: "prefill", To: "decode", Kind: contract.LinkKV, Addr: da.KV[r]})
	}
	return links
}

// Interpose routes new connections on the named link through via and
// drops pooled ones, so traffic flows through the proxy from now on. For
// client-router it changes Endpoint, which clients read when they start.
func (c *Cluster) Interpose(_ context.Context, name, via string) (contract.Restore, error) {
	var link *contract.Link
	var names []string
	for _, l := range c.Links() {
		names = append(names, l.Name)
		if l.Name == name {
			link = &l
		}
	}
	if link == nil {
		return nil, fmt.Errorf("interpose on link %q: %w: no such link (links: %s)", name, contract.ErrUnsupported, strings.Join(names, ", "))
	}
	if name == contract.LinkClientRouter {
		c.mu.Lock()
		old := c.endpoint
		c.endpoint = "http://" + via
		c.mu.Unlock()
		return func(context.Context) error {
			c.mu.Lock()
			c.endpoint = old
			c.mu.Unlock()
			return nil
		}, nil
	}
	c.links.set(link.Addr, via)
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() { c.links.set(link.Addr, "") })
		return nil
	}, nil
}

// Hooks returns every pause gate of prefill and decode.
func (c *Cluster) Hooks() (contract.Hooks, error) {
	return append(c.Prefill.Hooks().(hookSet), c.Decode.Hooks().(hookSet)...), nil
}

// Processes is unsupported: the in-process cluster has no role processes.
func (c *Cluster) Processes() (contract.Processes, error) {
	return nil, fmt.Errorf("process control: %w: the in-process cluster runs every role in one process (run roles as processes for process faults)", contract.ErrUnsupported)
}

// Health checks the router's /readiness (which asks prefill and decode)
// and each engine's /health_generate.
func (c *Cluster) Health(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	for _, u := range []string{"http://" + c.Router.Addr() + contract.PathReadiness,
		"http://" + c.Prefill.Addrs().HTTP + contract.PathHealthGenerate, "http://" + c.Decode.Addrs().HTTP + contract.PathHealthGenerate} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("health %s: %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health %s: status %d", u, resp.StatusCode)
		}
	}
	return nil
}

// Close stops every role and waits for their goroutines.
func (c *Cluster) Close(ctx context.Context) error {
	var errs []error
	if c.Router != nil {
		errs = append(errs, c.Router.Close(ctx))
	}
	if c.Decode != nil {
		errs = append(errs, c.Decode.Close(ctx))
	}
	if c.Prefill != nil {
		errs = append(errs, c.Prefill.Close(ctx))
	}
	return errors.Join(errs...)
}
