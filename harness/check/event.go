package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
}

// RoomsSnap is one engine's rooms. Periodic snapshots strip event
// histories; the final one (Final) keeps them for held rooms.
type RoomsSnap struct {
	Role    string                `json:"role"`
	Held    []contract.RoomRecord `json:"held"`
	Cleared int                   `json:"cleared"`
	Final   bool                  `json:"final,omitempty"`
	Err     string                `json:"error,omitempty"`
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

// Scrape is one engine's metrics at one moment, each family summed over its
// label sets (ranks). Err is set when the scrape failed.
type Scrape struct {
	Gauges   map[string]float64 `json:"gauges,omitempty"`
	Counters map[string]float64 `json:"counters,omitempty"`
	Err      string             `json:"error,omitempty"`
}

// Wedge is a gauge stuck above 0 with no progress: the silent PD failure.
// Since is when it last changed or the engine last made progress; At is when
// the watchdog flagged it (at least its window later).
type Wedge struct {
	Source string        `json:"source"`
	Gauge  string        `json:"gauge"`
	Value  float64       `json:"value"`
	Since  time.Duration `json:"since"`
	At     time.Duration `json:"at"`
}

// String is one line for a terminal.
func (w Wedge) String() string {
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
