package sim

import (
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Config is one simulated scenario: the engine, the clients, the fault
// schedule and the judging knobs. It mirrors a harness scenario file
// (sim/scenario builds one from it); zero fields take the defaults named
// on each.
type Config struct {
	// Name is the scenario's name, in traces and event logs.
	Name string
	// Seed is the scenario file's own seed, kept for the record; Run takes
	// the seed to use, which drives every random choice of a run
	// (scheduling order, latencies, rooms, clients, fault timing).
	Seed uint64
	// Duration is how long the clients send (warm-up included); required.
	Duration time.Duration
	// Engine configures the simulated engine exactly as the live one
	// (contract.EngineConfig.Resolve fills the defaults).
	Engine contract.EngineConfig
	// Clients is the simulated agent population.
	Clients Clients
	// Faults is the fault schedule, offsets from the end of warm-up.
	Faults []Fault
	// Checks holds drain, probe and load floor settings.
	Checks Checks
	// Strangers adds, beside the load, a peer that is not the engine:
	// decode gets status notices in states no prefill sends and, on
	// Mooncake, chunks addressed to its own buffers that overrun their
	// page or land on a committed room (what internal/testkit/hostilepeer
	// sends live). The fixed engine refuses each; no scenario file sets
	// it, swarm seeds draw it.
	Strangers bool
}

// Checks are the judging knobs of a simulated run; zero fields take the
// harness's defaults (drain 10s, 3 probes of 10s, floor 20 requests and 1
// cancel).
type Checks struct {
	DrainDeadline time.Duration
	Probes        int
	ProbeDeadline time.Duration
	MinRequests   int
	MinCancels    int
}

func (c Checks) withDefaults() Checks {
	if c.DrainDeadline <= 0 {
		c.DrainDeadline = 10 * time.Second
	}
	if c.Probes <= 0 {
		c.Probes = 3
	}
	if c.ProbeDeadline <= 0 {
		c.ProbeDeadline = 10 * time.Second
	}
	return c
}

// Clients is the simulated population: the knobs of agents.Options that
// shape traffic, with the same meaning (sim/scenario copies them). Zero
// values take the agents package's defaults, as listed.
type Clients struct {
	Agents            int           // default 30
	StartSpread       time.Duration // agent starts spread evenly over it
	WarmUp            time.Duration // faults start this long after the last agent started
	SystemPromptWords int           // shared prefix; default 3000
	UserPromptWords   int           // first user message; default 40
	ToolOutputWords   int           // per-turn growth, drawn in [N/2, N]; default 200
	MaxContextWords   int           // context cap beyond the system prompt; default 6000
	TurnsPerSession   int           // drawn in [1, N]; default 8
	MaxTokens         int           // drawn in [N/2, N]; default 32
	ThinkTime         time.Duration // mean pause between turns, drawn in [0, 2*mean]
	SubRequestRate    float64       // chance a turn fans out parallel sub-requests
	MaxSubRequests    int           // default 3
	CancelQueuedRate  float64       // cancel before the first token ...
	CancelQueuedDelay time.Duration // ... after a delay drawn in [0, N]
	RetrySameRidRate  float64       // a queued cancel sent again at once with the same rid
	RetrySameRoomRate float64       // a queued cancel sent again at once under a new rid with the same bootstrap room
	RetryDelay        time.Duration // either retry waits a pause drawn in [0, N] first; 0 at once
	AbortRequestRate  float64       // a queued or decode cancel made by /abort_request to both engines, the answer read on
	CancelDecodeRate  float64       // cancel after K tokens, K in [1, max-1]
	DeadlineRate      float64       // a client deadline drawn in [D/2, D]
	Deadline          time.Duration
	HangTimeout       time.Duration // default 30s: no end by then is hung
	KillEvery         time.Duration // mean agent lifetime (exponential); 0 never
	RestartDelay      time.Duration // pause before a killed agent restarts, in [0, N]
	KillAllAt         []time.Duration
	KillAllEvery      time.Duration
}

// Quiet switches off everything in the clients that sends an ABORT
// (cancels, client deadlines, kills, /abort_request), and so their
// retries: the only ABORTs left are the engine's own, from its deadlines.
// An exploration uses it where the first ABORT would end the ordering it
// is after (bootstrap-thread-death's loop dies on an ABORT before a
// corrupted message can reach it).
func (c *Clients) Quiet() {
	c.CancelQueuedRate, c.CancelDecodeRate, c.DeadlineRate, c.AbortRequestRate = 0, 0, 0, 0
	c.KillEvery, c.KillAllAt, c.KillAllEvery = 0, nil, 0
}

func (c Clients) withDefaults() Clients {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Agents, 30)
	def(&c.SystemPromptWords, 3000)
	def(&c.UserPromptWords, 40)
	def(&c.ToolOutputWords, 200)
	def(&c.MaxContextWords, 6000)
	def(&c.TurnsPerSession, 8)
	def(&c.MaxTokens, 32)
	def(&c.MaxSubRequests, 3)
	if c.HangTimeout <= 0 {
		c.HangTimeout = 30 * time.Second
	}
	return c
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Duration <= 0 {
		return fmt.Errorf("sim config %s: duration %v must be > 0", c.Name, c.Duration)
	}
	if _, _, err := c.Engine.Resolve(); err != nil {
		return fmt.Errorf("sim config %s: engine: %w", c.Name, err)
	}
	for i, f := range c.Faults {
		if err := f.validate(); err != nil {
			return fmt.Errorf("sim config %s: faults[%d]: %w", c.Name, i, err)
		}
	}
	return nil
}
