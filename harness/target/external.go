package target

import (
	"context"
	"errors"
	"fmt"
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
// host; restart is unsupported), and no network or protocol faults: it
// cannot be told
// to route a link through a proxy (see docs/sglang.md for the bootstrap
// rewriter that does that by hand).
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

// Links is empty: an external deployment cannot be re-routed by the harness.
func (e *External) Links() []contract.Link { return nil }

// Interpose is unsupported.
func (e *External) Interpose(_ context.Context, link, _ string) (contract.Restore, error) {
	return nil, fmt.Errorf("interpose on link %q: %w: an external deployment cannot be re-routed (start it with its bootstrap address pointing at a pdchaos proxy)", link, contract.ErrUnsupported)
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

// Close does nothing: the harness does not own an external deployment.
func (e *External) Close(context.Context) error { return nil }

// ExternalSource opens an External target.
type ExternalSource struct{ Target *External }

// Kind is "external".
func (ExternalSource) Kind() string { return "external" }

// Open validates the URLs and checks the router answers.
func (s ExternalSource) Open(ctx context.Context, _ contract.EngineConfig) (Target, error) {
	if err := s.Target.Validate(); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, HealthTimeout+5*time.Second)
	defer cancel()
	if err := s.Target.Health(hctx); err != nil {
		return nil, fmt.Errorf("open external target: %w", err)
	}
	return s.Target, nil
}

// InProcess is false.
func (ExternalSource) InProcess() bool { return false }

// SetsEngine is false: regressions and timeouts belong to the deployment.
func (ExternalSource) SetsEngine() bool { return false }
