package faults

import (
	"context"

	"github.com/pdchaos/pdchaos/contract"
)

// Layer is where a fault acts, so a scenario can say which layers a target
// must support before a run starts.
type Layer string

// Fault layers, from the client inwards.
const (
	LayerClient   Layer = "client"
	LayerNetwork  Layer = "network"
	LayerProtocol Layer = "protocol"
	LayerEngine   Layer = "engine"
	LayerProcess  Layer = "process"
)

// Heal undoes one injection. It must be safe to call more than once and
// after the context of Inject has ended.
type Heal func(ctx context.Context) error

// Fault is one fault as a value. Inject applies it fully or not at all: on
// error nothing is left applied and Heal is nil.
type Fault interface {
	// Name is stable and human-readable, e.g. "latency(kv/0,200ms)".
	Name() string
	// Layer is where the fault acts.
	Layer() Layer
	// Inject applies the fault to the target.
	Inject(ctx context.Context, t Target) (Heal, error)
	// Evidence reports what the fault did so far (across injections).
	Evidence() Evidence
}

// Preflighter is an optional part of a Fault: Preflight says, before a run
// starts, whether t can take the fault at all beyond having its layer (a
// process fault's role exists; a kill can be followed by a restart), so a
// run is refused up front instead of failing mid-way.
type Preflighter interface {
	Preflight(t Target) error
}

// Evidence says whether a fault took effect and by what measure. A fault
// that did nothing reports Effective false; the harness never counts that
// as verified.
type Evidence struct {
	Fault     string           `json:"fault"`
	Effective bool             `json:"effective"`
	Counters  map[string]int64 `json:"counters,omitempty"`
	Detail    string           `json:"detail,omitempty"`
}

// Target is what faults need from a deployment. The bundled engine
// (in-process or as processes) and an external deployment implement it; a
// capability a target lacks is reported with ErrUnsupported, never by the
// caller type-switching on the concrete target.
type Target interface {
	// Links lists the target's named TCP hops.
	Links() []contract.Link
	// Interpose sends new connections on the named link to via (a proxy
	// forwarding to the link's Addr) and drops existing ones, so traffic
	// flows through the proxy from now on.
	Interpose(ctx context.Context, link, via string) (contract.Restore, error)
	// Hooks gives the engine's pause gates.
	Hooks() (contract.Hooks, error)
	// Processes gives control over role processes.
	Processes() (contract.Processes, error)
}
