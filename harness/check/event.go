package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// Event types in events.jsonl.
const (
	EvRun     = "run"     // run start: scenario, seed, base wall time
	EvPhase   = "phase"   // a phase begins (warmup, faults, recovery, drain, judge)
	EvScrape  = "scrape"  // one /metrics scrape of one engine
	EvRooms   = "rooms"   // one /debug/rooms snapshot of one engine
	EvOutcome = "outcome" // one request's outcome
	EvFault   = "fault"   // a fault window applied (Applied) or ended
	EvWedge   = "wedge"   // the watchdog flagged a stuck gauge
	EvDrain   = "drain"   // the drain ended (settled or not)
	EvProbe   = "probe"   // one liveness probe
	EvLeaks   = "leaks"   // goroutines left after the target closed
	EvEnd     = "end"     // the run ended (interrupted or not)
	// EvCodeProbes is one role's code probe hits (/debug/probes) at the
	// end of the run.
	EvCodeProbes = "code-probes"
)

// Event is one line of events.jsonl. T is the offset from the run's base
// time on the monotonic clock; exactly one payload field is set.
type Event struct {
	T       time.Duration    `json:"t"`
	Type    string           `json:"type"`
	Source  string           `json:"source,omitempty"`
	Phase   string           `json:"phase,omitempty"`
	Run     *RunInfo         `json:"run,omitempty"`
	Scrape  *Scrape          `json:"scrape,omitempty"`
	Rooms   *RoomsSnap       `json:"rooms,omitempty"`
	Outcome *outcome.Outcome `json:"outcome,omitempty"`
	Fault   *schedule.Record `json:"fault,omitempty"`
	Wedge   *Wedge           `json:"wedge,omitempty"`
	Drain   *Drain           `json:"drain,omitempty"`
	Probe   *Probe           `json:"probe,omitempty"`
	Leaks   *Leaks           `json:"leaks,omitempty"`
	End     *EndInfo         `json:"end,omitempty"`
	// CodeProbes is set on EvCodeProbes.
	CodeProbes *CodeProbes `json:"code_probes,omitempty"`
}

// CodeProbes is one role's code probe hits at the end of the run, every
// probe of the role (zero ones too), by name. Err is set when the role did
// not answer /debug/probes (an external deployment has no such endpoint).
type CodeProbes struct {
	Role string           `json:"role,omitempty"`
	Hits map[string]int64 `json:"hits,omitempty"`
	// Recorded is the room events the role wrote, by kind
	// (contract.ProbesResponse.Recorded), read at the same instant as
	// Hits; nil for a role without a room history.
	Recorded map[string]int64 `json:"recorded,omitempty"`
	Err      string           `json:"error,omitempty"`
}

// RunInfo opens a log: what ran, with which seed, and the wall time of the
// base so room timestamps (wall clock) map onto offsets.
type RunInfo struct {
	Scenario string    `json:"scenario"`
	Seed     uint64    `json:"seed"`
	Target   string    `json:"target"`
	BaseWall time.Time `json:"base_wall"`
	Layers   []string  `json:"layers,omitempty"`
	// AnswersUnchecked is set when completed answers were not compared
	// with the fake model (an external deployment's real model).
	AnswersUnchecked bool `json:"answers_unchecked,omitempty"`
	// Engine is the resolved engine config the target runs (bundled and
	// role processes): the deadlines rooms are judged by and the
	// regressions switched on. Nil for an external deployment, whose
	// settings the harness does not know, and in logs written before it.
	Engine *contract.EngineConfig `json:"engine,omitempty"`
}

// RoomsSnap is one engine's rooms. Periodic snapshots strip held rooms'
// event histories; the final one (Final) keeps them. Ended carries, with
// their histories, the cleared rooms that are new (or got a late event)
// since the source's previous snapshot, so every room's end is in the log
// once however many the engine keeps; logs written before it lack it.
type RoomsSnap struct {
	Role    string                `json:"role"`
	Held    []contract.RoomRecord `json:"held"`
	Cleared int                   `json:"cleared"`
	Ended   []contract.RoomRecord `json:"ended,omitempty"`
	Final   bool                  `json:"final,omitempty"`
	Err     string                `json:"error,omitempty"`
	// PeerCleared (final snapshots only) are rooms this engine has cleared
	// while another engine still holds them, with their histories: the
	// other side of a stuck room.
	PeerCleared []contract.RoomRecord `json:"peer_cleared,omitempty"`
	// Queues are the engine's queue gauges (contract.QueueGaugesJudged),
	// by gauge and rank series as in Scrape.Ranks, read at the same
	// instant as Held, and QueueFacts what each held room's events said
	// then (read before a periodic snapshot drops the events): nil where
	// the target cannot read both at once (SGLang). SetQueues sets both.
	Queues     map[string]map[string]float64 `json:"queues,omitempty"`
	QueueFacts map[uint64]contract.QueueRoom `json:"queue_facts,omitempty"`
	// At is the event's time in the run, set by NewView.
	At time.Duration `json:"-"`
}

// Drain says whether the target settled after load stopped.
type Drain struct {
	Settled bool          `json:"settled"`
	Waited  time.Duration `json:"waited"`
	Reason  string        `json:"reason,omitempty"`
}

// Probe is one liveness request.
type Probe struct {
	OK      bool          `json:"ok"`
	Latency time.Duration `json:"latency"`
	Error   string        `json:"error,omitempty"`
}

// Leaks is the goroutine check after the target closed.
type Leaks struct {
	Checked bool   `json:"checked"`
	Leaked  int    `json:"leaked"`
	Detail  string `json:"detail,omitempty"`
}

// EndInfo closes a log.
type EndInfo struct {
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Scrape is one engine's metrics at one moment. Gauges and Counters hold
// each family summed over its ranks (per-priority duplicates of a total
// counted once; old names read under today's, contract.MetricAliases).
// Ranks keeps every gauge per rank, as SGLang exports it: family, then rank
// key (RankKey), then value; logs written before it existed lack it and
// are judged on the sums. Err is set when the scrape failed.
type Scrape struct {
	Gauges   map[string]float64 `json:"gauges,omitempty"`
	Counters map[string]float64 `json:"counters,omitempty"`
	// Ranks is each gauge per rank (nil in older logs).
	Ranks map[string]map[string]float64 `json:"ranks,omitempty"`
	// EngineType is the engine_type label (prefill, decode, unified) when
	// the engine exports one.
	EngineType string `json:"engine_type,omitempty"`
	Err        string `json:"error,omitempty"`
	// Logged holds what /metrics said for the gauges that the engine's
	// live loads (GET /v1/loads) replaced in Gauges and Ranks, where the
	// recorder read them (an engine whose gauges can be stale); nil where
	// Gauges are /metrics as scraped.
	Logged map[string]float64 `json:"logged,omitempty"`
}

// RankKey names one rank's series from its labels: "tp_rank=1", with
// dp_rank and pp_rank in front when the engine exports them (pp_rank only
// when not 0). A series without rank labels is "".
func RankKey(labels map[string]string) string {
	var parts []string
	if v, ok := labels[contract.LabelDPRank]; ok {
		parts = append(parts, contract.LabelDPRank+"="+v)
	}
	if v, ok := labels[contract.LabelPPRank]; ok && v != "0" {
		parts = append(parts, contract.LabelPPRank+"="+v)
	}
	if v, ok := labels[contract.LabelTPRank]; ok {
		parts = append(parts, contract.LabelTPRank+"="+v)
	}
	return strings.Join(parts, ",")
}

// Has reports whether the scrape carries the gauge family at all (on any
// rank): absent is not zero.
func (s Scrape) Has(gauge string) bool {
	if _, ok := s.Gauges[gauge]; ok {
		return true
	}
	_, ok := s.Ranks[gauge]
	return ok
}

// Wedge kinds: what the watchdog saw.
const (
	WedgeGauge = ""      // a slot gauge stuck above 0 with no progress
	WedgeRoom  = "room"  // a room past its state's deadline plus a margin
	WedgeQueue = "queue" // waiting requests growing while nothing completes
)

// Wedge is something stuck while the run goes on: a gauge above 0 with no
// progress (the silent PD failure), a room past its state's deadline (with
// its history), or a queue growing while its engine completes nothing.
// Since is when it last changed (or the engine last made progress); At is
// when the watchdog flagged it.
type Wedge struct {
	Kind   string        `json:"kind,omitempty"`
	Source string        `json:"source"`
	Gauge  string        `json:"gauge,omitempty"`
	Value  float64       `json:"value"`
	Since  time.Duration `json:"since"`
	At     time.Duration `json:"at"`
	// Room, Role, State, Deadline and Events are set for a room wedge.
	Room     uint64           `json:"room,omitempty"`
	Role     string           `json:"role,omitempty"`
	State    string           `json:"state,omitempty"`
	Deadline time.Duration    `json:"deadline,omitempty"`
	Events   []contract.Event `json:"events,omitempty"`
}

// String is one line for a terminal.
func (w Wedge) String() string {
	switch w.Kind {
	case WedgeRoom:
		return fmt.Sprintf("WEDGE room %d on %s %s: %s since %v, past its %v deadline (flagged at %v, %d events)",
			w.Room, w.Role, w.Source, w.State, w.Since.Round(time.Millisecond), w.Deadline, w.At.Round(time.Millisecond), len(w.Events))
	case WedgeQueue:
		return fmt.Sprintf("WEDGE %g requests waiting on %s, growing with no completion since %v (flagged at %v)",
			w.Value, w.Source, w.Since.Round(time.Millisecond), w.At.Round(time.Millisecond))
	}
	return fmt.Sprintf("WEDGE %s = %g on %s, unchanged with no progress since %v (flagged at %v)",
		w.Gauge, w.Value, w.Source, w.Since.Round(time.Millisecond), w.At.Round(time.Millisecond))
}

// ReadEvents parses an events.jsonl stream (for offline checks and reports).
// A malformed line is an error naming its line number; the caller names
// the file.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("read events line %d: %w", n, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}
