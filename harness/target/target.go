package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/faults"
)

// Target is the seam between the harness and a deployment: what faults need
// (links, hooks, processes) plus what the recorder, probes and checks read.
// The bundled engine implements it directly; so do Procs (the engine as
// role processes) and External (any SGLang-style deployment by URL).
type Target interface {
	faults.Target
	// Endpoint is the router URL clients and probes send to.
	Endpoint() string
	// MetricsURLs lists each engine's /metrics, scraped by the recorder.
	MetricsURLs() []string
	// EngineURLs lists each engine's base URL for /debug/rooms; empty when
	// the deployment has no such endpoint (rooms-terminal is then
	// inconclusive).
	EngineURLs() []string
	// Health checks that every role answers.
	Health(ctx context.Context) error
	// Close stops whatever the target started.
	Close(ctx context.Context) error
}

var _ Target = (*engine.Cluster)(nil)

// Layers probes which fault layers t supports, by asking for each capability
// (never by the concrete type), so a scenario can be refused before it
// starts. Client faults are always supported: they act in the agents.
func Layers(t Target) []faults.Layer {
	out := []faults.Layer{faults.LayerClient}
	links := t.Links()
	zmtp := false
	for _, l := range links {
		zmtp = zmtp || l.Kind == contract.LinkZMTP
	}
	// Interposing is probed per link at injection time; a target lists links
	// only if it can route them through a proxy.
	if len(links) > 0 {
		out = append(out, faults.LayerNetwork)
	}
	if zmtp {
		out = append(out, faults.LayerProtocol)
	}
	if _, err := t.Hooks(); err == nil {
		out = append(out, faults.LayerEngine)
	}
	if _, err := t.Processes(); err == nil {
		out = append(out, faults.LayerProcess)
	}
	return out
}

// RequireLayers returns an error naming every layer in need that t lacks.
func RequireLayers(t Target, need []faults.Layer) error {
	have := map[faults.Layer]bool{}
	for _, l := range Layers(t) {
		have[l] = true
	}
	var errs []error
	for _, l := range need {
		if !have[l] {
			errs = append(errs, fmt.Errorf("fault layer %s: %w", l, contract.ErrUnsupported))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("target cannot take the scenario's faults (has %v): %w", Layers(t), errors.Join(errs...))
	}
	return nil
}

// Source opens a target for one run. Open may start an engine (with
// the scenario's engine settings) or attach to a running deployment.
type Source interface {
	// Kind names the source for results ("bundled", "procs", "external").
	Kind() string
	// Open starts or attaches to the target; the caller closes it.
	Open(ctx context.Context, cfg contract.EngineConfig) (Target, error)
	// InProcess says whether the target's goroutines live in this process,
	// so the no-leaks check can count them after Close.
	InProcess() bool
	// SetsEngine says whether Open applies cfg (regressions, timeouts); an
	// external deployment does not, so a scenario asking for a regression is
	// refused rather than silently run on the fixed engine.
	SetsEngine() bool
}

// Bundled opens the in-process bundled engine (engine.StartCluster).
type Bundled struct{}

// Kind is "bundled".
func (Bundled) Kind() string { return "bundled" }

// Open starts an engine.Cluster with cfg.
func (Bundled) Open(ctx context.Context, cfg contract.EngineConfig) (Target, error) {
	c, err := engine.StartCluster(ctx, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("start bundled engine: %w", err)
	}
	return c, nil
}

// InProcess is true: the cluster's goroutines are ours to count.
func (Bundled) InProcess() bool { return true }

// SetsEngine is true.
func (Bundled) SetsEngine() bool { return true }

// Reset clears what a crashed run may have left on t (paused hooks,
// stopped processes); see faults.Reset.
func Reset(ctx context.Context, t Target) error {
	if err := faults.Reset(ctx, t); err != nil {
		return fmt.Errorf("reset target: %w", err)
	}
	return nil
}
