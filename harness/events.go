package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
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

// EventLog appends events to events.jsonl and keeps them in memory for the
// checkers. Safe for concurrent use; the base is the run's time origin.
type EventLog struct {
	base time.Time
	mu   sync.Mutex
	w    *bufio.Writer
	f    *os.File
	evs  []Event
	err  error
}

// NewEventLog writes to path (empty: memory only) with time origin base.
func NewEventLog(path string, base time.Time) (*EventLog, error) {
	l := &EventLog{base: base}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("create event log: %w", err)
		}
		l.f, l.w = f, bufio.NewWriter(f)
	}
	return l, nil
}

// Since is the offset of now from the base on the monotonic clock.
func (l *EventLog) Since() time.Duration { return time.Since(l.base) }

// Add stamps ev (if T is 0) and appends it.
func (l *EventLog) Add(ev Event) {
	if ev.T == 0 {
		ev.T = time.Since(l.base)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
	if l.w != nil && l.err == nil {
		b, err := json.Marshal(ev)
		if err == nil {
			b = append(b, '\n')
			_, err = l.w.Write(b)
		}
		l.err = err
	}
}

// Events returns a copy of every event so far.
func (l *EventLog) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs...)
}

// Flush writes buffered lines to the file.
func (l *EventLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return l.err
	}
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	if l.err != nil {
		return fmt.Errorf("write event log: %w", l.err)
	}
	return nil
}

// Close flushes and closes the file.
func (l *EventLog) Close() error {
	err := l.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
		l.f, l.w = nil, nil
	}
	return err
}

// ReadEvents parses an events.jsonl stream (for offline checks and reports).
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

// ReadEventsFile reads events.jsonl from path.
func ReadEventsFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open events %s: %w", path, err)
	}
	defer f.Close()
	return ReadEvents(f)
}
