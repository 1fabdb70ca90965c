package harness

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// Status is a check's (or a run's) verdict.
type Status string

// Verdicts. Inconclusive means the run proves nothing either way (no load,
// a fault that did nothing, a capability the target lacks).
const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	Inconclusive Status = "inconclusive"
	// Skip means the check does not apply to this target (no /debug/rooms,
	// goroutines in other processes); it does not affect the verdict.
	Skip Status = "skip"
)

// CheckResult is one checker's judgement with its evidence: counts of what
// it looked at, and for failures the stuck rooms and details.
type CheckResult struct {
	Name     string           `json:"name"`
	Status   Status           `json:"status"`
	Summary  string           `json:"summary"`
	Evidence map[string]int64 `json:"evidence"`
	Stuck    []StuckRoom      `json:"stuck,omitempty"`
	Details  []string         `json:"details,omitempty"`
}

// StuckRoom is a room the engine still held after the drain: its state,
// history, since when it has not moved, and the faults active then.
type StuckRoom struct {
	Source       string           `json:"source"`
	Role         string           `json:"role"`
	Room         uint64           `json:"room"`
	State        string           `json:"state"`
	Ranks        map[int]string   `json:"ranks,omitempty"`
	Since        time.Duration    `json:"since"`
	ActiveFaults []string         `json:"active_faults,omitempty"`
	Events       []contract.Event `json:"events,omitempty"`
}

// Checks is the ordered result of every checker. Its Error returns the first
// failing check, so a test can write `if err := checks.Err(); err != nil`.
type Checks []CheckResult

// Error names the first failing check ("" if none failed).
func (c Checks) Error() string {
	for _, r := range c {
		if r.Status == Fail {
			return fmt.Sprintf("%s: %s", r.Name, r.Summary)
		}
	}
	return ""
}

// Err is c when a check failed, else nil.
func (c Checks) Err() error {
	if c.Error() == "" {
		return nil
	}
	return c
}

// Verdict is fail if any check failed, else inconclusive if any was, else pass.
func (c Checks) Verdict() Status {
	v := Pass
	for _, r := range c {
		switch r.Status {
		case Fail:
			return Fail
		case Inconclusive:
			v = Inconclusive
		}
	}
	return v
}

// Get returns the named check's result.
func (c Checks) Get(name string) (CheckResult, bool) {
	for _, r := range c {
		if r.Name == name {
			return r, true
		}
	}
	return CheckResult{}, false
}

// Failed lists the names of failing checks.
func (c Checks) Failed() []string {
	var out []string
	for _, r := range c {
		if r.Status == Fail {
			out = append(out, r.Name)
		}
	}
	return out
}

// view indexes a recorded log for the checkers.
type view struct {
	run      RunInfo
	outcomes []outcome.Outcome
	scrapes  map[string][]Scrape
	rooms    map[string][]RoomsSnap
	final    map[string]RoomsSnap
	faults   []schedule.Record // last record per window
	wedges   []Wedge
	probes   []Probe
	leaks    *Leaks
	drain    *Drain
}

func newView(evs []Event) *view {
	v := &view{scrapes: map[string][]Scrape{}, rooms: map[string][]RoomsSnap{}, final: map[string]RoomsSnap{}}
	win := map[int]int{}
	for _, ev := range evs {
		switch {
		case ev.Run != nil:
			v.run = *ev.Run
		case ev.Outcome != nil:
			v.outcomes = append(v.outcomes, *ev.Outcome)
		case ev.Scrape != nil:
			v.scrapes[ev.Source] = append(v.scrapes[ev.Source], *ev.Scrape)
		case ev.Rooms != nil && ev.Rooms.Final:
			v.final[ev.Source] = *ev.Rooms
		case ev.Rooms != nil:
			v.rooms[ev.Source] = append(v.rooms[ev.Source], *ev.Rooms)
		case ev.Fault != nil:
			if i, ok := win[ev.Fault.Window]; ok {
				v.faults[i] = *ev.Fault
			} else {
				win[ev.Fault.Window] = len(v.faults)
				v.faults = append(v.faults, *ev.Fault)
			}
		case ev.Wedge != nil:
			v.wedges = append(v.wedges, *ev.Wedge)
		case ev.Probe != nil:
			v.probes = append(v.probes, *ev.Probe)
		case ev.Leaks != nil:
			v.leaks = ev.Leaks
		case ev.Drain != nil:
			v.drain = ev.Drain
		}
	}
	return v
}

// activeAt names the fault windows active at offset t.
func (v *view) activeAt(t time.Duration) []string {
	var out []string
	for _, f := range v.faults {
		if f.Applied && f.Start <= t && (t <= f.End || f.End == 0) {
			out = append(out, f.Fault)
		}
	}
	return out
}

// stuckRooms lists held rooms of the final snapshots, oldest first.
func (v *view) stuckRooms(limit int) (rooms []StuckRoom, total int) {
	srcs := make([]string, 0, len(v.final))
	for s := range v.final {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		snap := v.final[src]
		for _, r := range snap.Held {
			total++
			if len(rooms) >= limit {
				continue
			}
			since := stuckSince(r, v.run.BaseWall)
			rooms = append(rooms, StuckRoom{Source: src, Role: snap.Role, Room: r.Room, State: r.State,
				Ranks: r.Ranks, Since: since, ActiveFaults: v.activeAt(since), Events: r.Events})
		}
	}
	return rooms, total
}

// stuckSince is the offset of a room's last change from the run's base.
func stuckSince(r contract.RoomRecord, base time.Time) time.Duration {
	if base.IsZero() || r.Updated.IsZero() {
		return 0
	}
	return r.Updated.Sub(base)
}

// Judge runs every checker over a recorded log, in the fixed order.
func Judge(evs []Event, spec CheckSpec) Checks {
	spec = spec.withDefaults()
	v := newView(evs)
	return Checks{
		checkRoomsTerminal(v), checkSlotsReleased(v), checkLiveness(v), checkClientOutcomes(v),
		checkIntegrity(v), checkNoLeaks(v), checkFaultsVerified(v), checkLoadFloor(v, spec),
	}
}

func result(name string, st Status, ev map[string]int64, format string, a ...any) CheckResult {
	return CheckResult{Name: name, Status: st, Evidence: ev, Summary: fmt.Sprintf(format, a...)}
}

func joinLimit(xs []string, n int) string {
	if len(xs) > n {
		return strings.Join(xs[:n], "; ") + fmt.Sprintf("; … %d more", len(xs)-n)
	}
	return strings.Join(xs, "; ")
}
