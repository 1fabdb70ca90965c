package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/hooks"
)

// External is a deployment the harness does not own, described only by
// URLs: any SGLang-style PD deployment (or the bundled engine reached through
// its public endpoints). It supports client faults always, engine hooks when
// DebugHooks is set (the bundled engine's /debug/hooks), stop/continue
// process faults on whole process trees when PIDs or Procs are given (same
// host; restart is unsupported), and protocol and network faults on the
// control links when Bootstrap is given: Open then reads prefill's
// topology from /route and puts pdchaos's own hops between decode and
// prefill (a /route rewriter on RouteListen, a frame Front per prefill
// rank, a notify Front per decode address carried in registrations,
// TransferInfos and ABORTs), which Interpose redirects to a fault's proxy.
// Decode must look prefill up through the rewriter: Open prints the router
// flag that does it, and Close says whether decode did.
type External struct {
	// Router is the router's base URL, e.g. http://127.0.0.1:8000.
	Router string `json:"router" yaml:"router"`
	// Metrics lists each engine's /metrics URL.
	Metrics []string `json:"metrics" yaml:"metrics"`
	// Engines lists engine base URLs serving /debug/rooms (optional).
	Engines []string `json:"engines,omitempty" yaml:"engines,omitempty"`
	// DebugHooks enables engine-hook faults through /debug/hooks on Engines.
	DebugHooks bool `json:"debug_hooks,omitempty" yaml:"debug_hooks,omitempty"`
	// PIDs maps a role to its process id on this host, for SIGSTOP faults
	// (restart is not possible: the harness did not start the process).
	PIDs map[string]int `json:"pids,omitempty" yaml:"pids,omitempty"`
	// Procs maps a role to a regular expression matched against command
	// lines in /proc (--proc ROLE=PATTERN); an all-digit pattern is a pid.
	// The matching process and its whole tree take the process faults.
	Procs map[string]string `json:"procs,omitempty" yaml:"procs,omitempty"`
	// Bootstrap is prefill's bootstrap server (http://host:8998); set, it
	// turns on the interposed control links (--bootstrap).
	Bootstrap string `json:"bootstrap,omitempty" yaml:"bootstrap,omitempty"`
	// RouteListen is where the /route rewriter listens; empty means
	// DefaultRouteListen (127.0.0.1:9998). Loopback only.
	RouteListen string `json:"route_listen,omitempty" yaml:"route_listen,omitempty"`
	// RouteListener, if set, is an already bound listener the rewriter
	// serves on instead of RouteListen (tests and embedders that must know
	// the address before the router starts). Open takes it over: it is
	// closed with the target and serves one run only.
	RouteListener net.Listener `json:"-" yaml:"-"`
	// Log receives the interposer's lines (where decode must point, whether
	// it did); nil discards them.
	Log io.Writer `json:"-" yaml:"-"`

	ip  *interposer
	mem *interposeMemory
}

var _ Target = (*External)(nil)

// Validate names the first missing or bad field.
func (e *External) Validate() error {
	if e.Router == "" {
		return errors.New("external target: field router: empty")
	}
	if !strings.HasPrefix(e.Router, "http://") && !strings.HasPrefix(e.Router, "https://") {
		return fmt.Errorf("external target: field router: %q is not an http(s) URL", e.Router)
	}
	if len(e.Metrics) == 0 {
		return errors.New("external target: field metrics: at least one /metrics URL is needed")
	}
	for _, m := range []map[string]string{e.Procs, pidNames(e.PIDs)} {
		for role := range m {
			if role != "router" && role != "prefill" && role != "decode" {
				return fmt.Errorf("external target: field procs: role %q (want router, prefill or decode)", role)
			}
		}
	}
	if e.Bootstrap != "" && !strings.HasPrefix(e.Bootstrap, "http://") && !strings.HasPrefix(e.Bootstrap, "https://") {
		return fmt.Errorf("external target: field bootstrap: %q is not an http(s) URL of prefill's bootstrap server", e.Bootstrap)
	}
	if e.Bootstrap != "" {
		// The hops listen on 127.0.0.1 and their addresses go into /route
		// answers and decode's frames: decode and prefill must share the host.
		u, err := url.Parse(e.Bootstrap)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("external target: field bootstrap: %q has no host", e.Bootstrap)
		}
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("external target: field bootstrap: %s is not on this host; pdchaos's control-link hops listen on 127.0.0.1 only, so run pdchaos on the deployment's host", u.Host)
		}
	}
	if e.RouteListen != "" {
		host, _, err := net.SplitHostPort(e.RouteListen)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("external target: field route_listen: %q is not a loopback host:port", e.RouteListen)
		}
	}
	if e.DebugHooks && len(e.Engines) == 0 {
		return errors.New("external target: field debug_hooks: needs engines (base URLs serving /debug/hooks)")
	}
	return nil
}

// Endpoint is the router URL.
func (e *External) Endpoint() string { return strings.TrimRight(e.Router, "/") }

// MetricsURLs is Metrics.
func (e *External) MetricsURLs() []string { return e.Metrics }

// EngineURLs is Engines (may be empty).
func (e *External) EngineURLs() []string { return e.Engines }

// Links lists bootstrap, control/i and notify/i once Open has interposed
// them (Bootstrap given); otherwise none: the deployment cannot be
// re-routed.
func (e *External) Links() []contract.Link {
	if e.ip == nil {
		return nil
	}
	return e.ip.links()
}

// Interpose redirects pdchaos's hop on the link to via (a fault's proxy);
// without Bootstrap it is unsupported.
func (e *External) Interpose(_ context.Context, link, via string) (contract.Restore, error) {
	if e.ip == nil {
		return nil, fmt.Errorf("interpose on link %q: %w: an external deployment is re-routed only through its bootstrap server (give --bootstrap URL)", link, contract.ErrUnsupported)
	}
	return e.ip.interpose(link, via)
}

// Interposed reports what went through the interposed hops; ok is false
// without Bootstrap.
func (e *External) Interposed() (InterposeReport, bool) {
	if e.ip == nil {
		return InterposeReport{}, false
	}
	return e.ip.report(), true
}

// Hooks speaks /debug/hooks to every engine when enabled.
func (e *External) Hooks() (contract.Hooks, error) {
	if !e.DebugHooks || len(e.Engines) == 0 {
		return nil, fmt.Errorf("engine hooks: %w: not enabled for this external target", contract.ErrUnsupported)
	}
	var m multiHooks
	for _, u := range e.Engines {
		m = append(m, &hooks.HooksClient{BaseURL: strings.TrimRight(u, "/")})
	}
	return m, nil
}

// Processes gives stop/continue of whole process trees over the roles
// given by pid or --proc pattern; Restart (and so sigkill) is unsupported.
func (e *External) Processes() (contract.Processes, error) {
	if len(e.PIDs) == 0 && len(e.Procs) == 0 {
		return nil, fmt.Errorf("process control: %w: no --proc ROLE=PATTERN given for this external target", contract.ErrUnsupported)
	}
	return externalProcs{pids: e.PIDs, patterns: e.Procs}, nil
}

// Health asks the router's /readiness and each engine's /health_generate
// (falling back to /health where they are missing); see ProbeHealth.
func (e *External) Health(ctx context.Context) error {
	return ProbeHealth(ctx, e.Endpoint(), EngineBases(e)).Err()
}

// pidNames is the role set of a pid map.
func pidNames(m map[string]int) map[string]string {
	out := map[string]string{}
	for k := range m {
		out[k] = ""
	}
	return out
}

// Close stops the interposed hops (the deployment itself is not the
// harness's), after saying whether decode went through them.
func (e *External) Close(ctx context.Context) error {
	ip := e.ip
	if ip == nil {
		return nil
	}
	e.ip = nil
	rep := ip.report()
	w := e.logw()
	if rep.Reached() {
		fmt.Fprintf(w, "interpose: decode went through pdchaos: %d /route lookup(s) rewritten, %d control connection(s), %d message(s), %d decode address(es) rewritten, %d not rewritable, %d notify connection(s) with %d message(s), %d connection(s) moved between messages\n",
			rep.Route.Rewritten, rep.Control.Conns, rep.Control.Messages, rep.Control.Rewritten, rep.Control.Unrewritten, rep.Notify.Conns, rep.Notify.Messages,
			rep.Control.Spliced+rep.Notify.Spliced)
	} else {
		fmt.Fprintf(w, "interpose: decode never looked prefill up through the /route rewriter nor connected to a control proxy: no protocol or network fault reached it; %s, and restart decode if it cached the old route\n", ip.routerHint())
	}
	return ip.close(ctx)
}

func (e *External) logw() io.Writer {
	if e.Log == nil {
		return io.Discard
	}
	return e.Log
}

// Attach starts the interposed hops of Bootstrap (Open does it; doctor
// calls it alone, without the health gate), remembering their addresses
// for the next Open (a soak's next run), and says where decode must point.
// Without Bootstrap it does nothing. Close stops the hops.
func (e *External) Attach(ctx context.Context) error {
	if e.Bootstrap == "" {
		return nil
	}
	if e.ip != nil {
		return errors.New("attach external target: already attached (close it first)")
	}
	if e.mem == nil && e.RouteListen != "" {
		e.mem = &interposeMemory{listen: map[string]string{"route": e.RouteListen}, slotOf: map[string]int{}}
	}
	if e.mem == nil {
		e.mem = &interposeMemory{listen: map[string]string{}, slotOf: map[string]int{}}
	}
	ln := e.RouteListener
	e.RouteListener = nil
	ip, err := startInterposer(ctx, e.Bootstrap, e.mem.addr("route"), ln, e.mem, e.logw())
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	e.mem.keep("route", ip.ln.Addr().String())
	e.ip = ip
	w := e.logw()
	fmt.Fprintf(w, "interpose: /route rewriter on %s in front of %s; %d prefill rank(s)\n", ip.ln.Addr(), e.Bootstrap, len(ip.ranks))
	for i, r := range ip.ranks {
		fmt.Fprintf(w, "interpose: %s %s -> prefill rank tp %d dp %d at %s\n", contract.ControlLink(i), ip.control[i].Addr(), r.TP, r.DP, r.Addr)
	}
	fmt.Fprintf(w, "interpose: decode must reach prefill's bootstrap through the rewriter: %s\n", ip.routerHint())
	return nil
}

// ExternalSource opens an External target.
type ExternalSource struct{ Target *External }

// Kind is "external".
func (ExternalSource) Kind() string { return "external" }

// Open validates the URLs and checks the router answers.
func (s ExternalSource) Open(ctx context.Context, _ contract.EngineConfig) (Target, error) {
	if err := s.Target.Validate(); err != nil {
		return nil, err
	}
	if err := s.Target.Attach(ctx); err != nil {
		return nil, fmt.Errorf("open external target: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, HealthTimeout+5*time.Second)
	defer cancel()
	if err := s.Target.Health(hctx); err != nil {
		_ = s.Target.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open external target: %w", err)
	}
	return s.Target, nil
}

// InProcess is false.
func (ExternalSource) InProcess() bool { return false }

// SetsEngine is false: regressions and timeouts belong to the deployment.
func (ExternalSource) SetsEngine() bool { return false }
