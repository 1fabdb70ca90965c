package check

import (
	"sort"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// maxStuck bounds the stuck rooms a failure lists in full.
const maxStuck = 20

// View indexes a recorded log by payload: what the checkers read, and what
// a run's result reports (fault windows, wedges, the drain, outcomes).
type View struct {
	// Run is the log's opening record.
	Run RunInfo
	// Outcomes are every request outcome, in log order.
	Outcomes []outcome.Outcome
	// Sent is, by bootstrap room, when the first client request the
	// router named that room for was sent (an outcome's Start): the
	// room's life begins there, before either engine hears of it.
	Sent map[uint64]time.Duration
	// Scrapes are each source's /metrics scrapes, in log order.
	Scrapes map[string][]Scrape
	// Rooms are each engine's periodic rooms snapshots; Final its last full one.
	Rooms map[string][]RoomsSnap
	Final map[string]RoomsSnap
	// Roles maps each rooms source to its engine's role; Ended holds each
	// source's ended rooms by room, the latest copy of each record winning.
	// A room can end twice on one side: a late metadata or ABORT re-opens a
	// room the side had cleared, and that second record ends too. Ended
	// keeps the record created first (the request the client sent);
	// Reopened holds the later ones, so a room's whole history is still read
	// (roomsByRole merges both) while cancels-reached judges the request.
	Roles    map[string]string
	Ended    map[string]map[uint64]contract.RoomRecord
	Reopened map[string][]contract.RoomRecord
	// Faults holds the last record of each fault window, in window order.
	Faults []schedule.Record
	// Wedges are the watchdog's flags during the run.
	Wedges []Wedge
	// Probes are the liveness probes after the drain.
	Probes []Probe
	// CodeProbes are each role's code probe hits at the end of the run, by
	// source; the last report of a source wins.
	CodeProbes map[string]CodeProbes
	// Leaks, Drain and End are nil when the log lacks them (a partial run).
	Leaks *Leaks
	Drain *Drain
	End   *EndInfo
}

// NewView indexes evs. The last leaks, drain and end events win.
func NewView(evs []Event) *View {
	v := &View{Sent: map[uint64]time.Duration{}, Scrapes: map[string][]Scrape{}, Rooms: map[string][]RoomsSnap{}, Final: map[string]RoomsSnap{},
		Roles: map[string]string{}, Ended: map[string]map[uint64]contract.RoomRecord{}, Reopened: map[string][]contract.RoomRecord{}, CodeProbes: map[string]CodeProbes{}}
	win := map[int]int{}
	for _, ev := range evs {
		switch {
		case ev.Run != nil:
			v.Run = *ev.Run
		case ev.Outcome != nil:
			o := *ev.Outcome
			v.Outcomes = append(v.Outcomes, o)
			if at, seen := v.Sent[o.Room]; o.HasRoom && (!seen || o.Start < at) {
				v.Sent[o.Room] = o.Start
			}
		case ev.Scrape != nil:
			v.Scrapes[ev.Source] = append(v.Scrapes[ev.Source], *ev.Scrape)
		case ev.Rooms != nil:
			rs := *ev.Rooms
			rs.At = ev.T
			v.addRooms(ev.Source, rs)
		case ev.Fault != nil:
			if i, ok := win[ev.Fault.Window]; ok {
				v.Faults[i] = *ev.Fault
			} else {
				win[ev.Fault.Window] = len(v.Faults)
				v.Faults = append(v.Faults, *ev.Fault)
			}
		case ev.Wedge != nil:
			v.Wedges = append(v.Wedges, *ev.Wedge)
		case ev.Probe != nil:
			v.Probes = append(v.Probes, *ev.Probe)
		case ev.CodeProbes != nil:
			v.CodeProbes[ev.Source] = *ev.CodeProbes
		case ev.Leaks != nil:
			v.Leaks = ev.Leaks
		case ev.Drain != nil:
			v.Drain = ev.Drain
		case ev.End != nil:
			v.End = ev.End
		}
	}
	return v
}

// addRooms indexes one rooms snapshot.
func (v *View) addRooms(src string, s RoomsSnap) {
	if s.Final {
		v.Final[src] = s
	} else {
		v.Rooms[src] = append(v.Rooms[src], s)
	}
	if s.Role != "" {
		v.Roles[src] = s.Role
	}
	if len(s.Ended) > 0 && v.Ended[src] == nil {
		v.Ended[src] = map[uint64]contract.RoomRecord{}
	}
	// A later snapshot repeats a record (same creation): the latest copy
	// wins. A record created at another time is the room re-opened after
	// it ended, in the same snapshot or a later one: the first-created
	// stays in Ended, the other goes to Reopened.
	for _, r := range s.Ended {
		prev, ok := v.Ended[src][r.Room]
		switch {
		case !ok || prev.Created.Equal(r.Created):
			v.Ended[src][r.Room] = r
		case r.Created.Before(prev.Created):
			v.Ended[src][r.Room] = r
			v.Reopened[src] = append(v.Reopened[src], prev)
		default:
			v.Reopened[src] = append(v.Reopened[src], r)
		}
	}
}

// ProbeHits sums the code probe hits every role reported, by probe name
// (zero ones included); nil when no role reported any.
func (v *View) ProbeHits() map[string]int64 {
	var out map[string]int64
	for _, cp := range v.CodeProbes {
		if cp.Err != "" {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		for n, h := range cp.Hits {
			out[n] += h
		}
	}
	return out
}

// activeAt names the fault windows active at offset t.
func (v *View) activeAt(t time.Duration) []string {
	var out []string
	for _, f := range v.Faults {
		if f.Applied && f.Start <= t && (t <= f.End || f.End == 0) {
			out = append(out, f.Fault)
		}
	}
	return out
}

// stuckRooms lists held rooms of the final snapshots, oldest first.
func (v *View) stuckRooms(limit int) (rooms []StuckRoom, total int) {
	srcs := make([]string, 0, len(v.Final))
	for s := range v.Final {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		snap := v.Final[src]
		for _, r := range snap.Held {
			total++
			if len(rooms) >= limit {
				continue
			}
			since := stuckSince(r, v.Run.BaseWall)
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
