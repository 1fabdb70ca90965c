package record

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"golang.org/x/sync/errgroup"
)

// Watchdog watches scrapes and room snapshots for wedges. It is pure:
// Observe and ObserveRooms take the time, so it is table-tested without a
// clock. It flags, each episode once, at the first observation that shows it:
//   - a gauge above 0 while neither it nor the source's progress counters
//     moved for Window (the engine stopped);
//   - waiting requests (Queues, summed) grown above their count when the
//     source last completed anything (Completions moved), Window after that
//     (pages exhausted, requests waiting, while other work may go on);
//     judged only on a source whose completions ever moved (decode);
//   - a held room in one state longer than its deadline plus Margin, where
//     the target shows room state (ObserveRooms).
type Watchdog struct {
	// Window is how long a gauge may sit still; zero means 5s.
	Window time.Duration
	// Gauges and Progress default to contract.SlotGauges and contract.ProgressCounters.
	Gauges   []string
	Progress []string
	// Queues default to contract.QueueGauges; Completions to
	// sglang:generation_tokens_total.
	Queues      []string
	Completions []string
	// Deadlines bounds a room's time in one state, by RoomDeadlineKey(role,
	// state), from the scenario's engine config. States without one are not
	// judged; nil (an external target) judges no room.
	Deadlines map[string]time.Duration
	// Margin is added to every deadline; zero means 2s.
	Margin time.Duration
	// BaseWall is the run's base wall time, to place rooms' updates.
	BaseWall time.Time

	src   map[string]*srcState
	rooms map[string]map[uint64]*roomState
}

// RoomDeadlineKey keys Watchdog.Deadlines: "prefill/Bootstrapping".
func RoomDeadlineKey(role, state string) string { return role + "/" + state }

type srcState struct {
	progress   float64
	progressAt time.Duration
	gauges     map[string]*gaugeState
	// queue growth
	queueSeen    bool
	completions  float64
	completedAt  time.Duration
	queueThen    float64
	everComplete bool
	queueFired   bool
}

type roomState struct {
	state string
	since time.Duration
	fired bool
}

type gaugeState struct {
	value float64
	since time.Duration
	fired bool
}

// Observe feeds one scrape of source taken at offset at and returns the
// wedges it reveals.
func (w *Watchdog) Observe(at time.Duration, source string, s check.Scrape) []check.Wedge {
	if s.Err != "" {
		return nil
	}
	if w.src == nil {
		w.src = map[string]*srcState{}
	}
	if w.Window <= 0 {
		w.Window = 5 * time.Second
	}
	if w.Gauges == nil {
		w.Gauges = contract.SlotGauges()
	}
	if w.Progress == nil {
		w.Progress = contract.ProgressCounters()
	}
	var prog float64
	for _, c := range w.Progress {
		prog += s.Counters[c]
	}
	st, ok := w.src[source]
	if !ok {
		st = &srcState{progress: prog, progressAt: at, gauges: map[string]*gaugeState{}}
		w.src[source] = st
	}
	if prog != st.progress {
		st.progress, st.progressAt = prog, at
		for _, g := range st.gauges {
			g.fired = false
		}
	}
	out := w.queueGrowth(at, source, st, s)
	for _, name := range w.Gauges {
		v := s.Gauges[name]
		g, ok := st.gauges[name]
		if !ok || g.value != v {
			st.gauges[name] = &gaugeState{value: v, since: at}
			continue
		}
		since := max(g.since, st.progressAt)
		if v > 0 && !g.fired && at-since >= w.Window {
			g.fired = true
			out = append(out, check.Wedge{Source: source, Gauge: name, Value: v, Since: since, At: at})
		}
	}
	return out
}

// queueGrowth flags waiting requests that grew while the source completed
// nothing for Window.
func (w *Watchdog) queueGrowth(at time.Duration, source string, st *srcState, s check.Scrape) []check.Wedge {
	queues, comps := w.Queues, w.Completions
	if queues == nil {
		queues = contract.QueueGauges()
	}
	if comps == nil {
		comps = []string{contract.MetricGenerationTokens}
	}
	var q, c float64
	for _, g := range queues {
		q += s.Gauges[g]
	}
	for _, n := range comps {
		c += s.Counters[n]
	}
	switch {
	case !st.queueSeen:
		st.queueSeen = true
		st.completions, st.completedAt, st.queueThen, st.everComplete = c, at, q, c > 0
		return nil
	case c != st.completions:
		st.completions, st.completedAt, st.queueThen, st.queueFired = c, at, q, false
		st.everComplete = true
		return nil
	}
	if !st.everComplete || st.queueFired || q <= st.queueThen || at-st.completedAt < w.Window {
		return nil
	}
	st.queueFired = true
	return []check.Wedge{{Kind: check.WedgeQueue, Source: source, Gauge: "waiting requests", Value: q, Since: st.completedAt, At: at}}
}

// ObserveRooms feeds one rooms snapshot (held rooms with their histories)
// of source, an engine of role, taken at offset at, and returns the rooms
// it finds past their state's deadline plus Margin. A room's time in a
// state counts from the earlier of when it was first seen in it and its
// last update, both no earlier than it entered the state, so a room is
// never flagged early.
func (w *Watchdog) ObserveRooms(at time.Duration, source, role string, held []contract.RoomRecord) []check.Wedge {
	if w.Deadlines == nil {
		return nil
	}
	if w.rooms == nil {
		w.rooms = map[string]map[uint64]*roomState{}
	}
	margin := w.Margin
	if margin <= 0 {
		margin = 2 * time.Second
	}
	prev := w.rooms[source]
	cur := make(map[uint64]*roomState, len(held))
	var out []check.Wedge
	for _, r := range held {
		st, ok := prev[r.Room]
		if !ok || st.state != r.State {
			since := at
			if !w.BaseWall.IsZero() && !r.Updated.IsZero() {
				since = min(since, r.Updated.Sub(w.BaseWall))
			}
			st = &roomState{state: r.State, since: since}
		}
		cur[r.Room] = st
		d, ok := w.Deadlines[RoomDeadlineKey(role, r.State)]
		if !ok || st.fired || at-st.since <= d+margin {
			continue
		}
		st.fired = true
		out = append(out, check.Wedge{Kind: check.WedgeRoom, Source: source, Room: r.Room, Role: role, State: r.State,
			Value: (at - st.since).Seconds(), Since: st.since, At: at, Deadline: d,
			Events: append([]contract.Event(nil), r.Events...)})
	}
	w.rooms[source] = cur
	return out
}

// WatchSummary is what a watch saw of each URL, so its caller can tell "no
// wedge" from "could not see": a watch blind to part of the time proves
// nothing about that part.
type WatchSummary map[string]*URLWatch

// URLWatch is one URL's scrapes over a watch.
type URLWatch struct {
	// Scrapes and Failed count every scrape and the failed ones.
	Scrapes, Failed int
	// LastErr is the last failure; empty when none failed.
	LastErr string
	// Blind is the longest time without a good scrape: between two good
	// ones, or from the start or the last good one to the end.
	Blind time.Duration

	lastGood time.Duration
}

// MaxFailedShare is the share of failed scrapes above which a watch of a
// URL is inconclusive even when no gap alone reached the window (a target
// whose /metrics flaps).
const MaxFailedShare = 0.1

// Inconclusive says why the watch of u cannot vouch for it (empty when it
// can): it was blind for window or longer, or more than MaxFailedShare of
// its scrapes failed.
func (w *URLWatch) Inconclusive(u string, window time.Duration) string {
	switch {
	case w.Scrapes > 0 && w.Failed == w.Scrapes:
		return fmt.Sprintf("%s: every one of %d scrapes failed (last: %s)", u, w.Scrapes, w.LastErr)
	case w.Blind >= window:
		return fmt.Sprintf("%s: no good scrape for %v, at least the wedge window %v (%d of %d scrapes failed; last: %s)",
			u, w.Blind.Round(time.Millisecond), window, w.Failed, w.Scrapes, w.LastErr)
	case float64(w.Failed) > MaxFailedShare*float64(w.Scrapes):
		return fmt.Sprintf("%s: %d of %d scrapes failed, over %.0f%% (last: %s)", u, w.Failed, w.Scrapes, 100*MaxFailedShare, w.LastErr)
	}
	return ""
}

// WatchOptions shape Watch; zero fields get the defaults.
type WatchOptions struct {
	// Interval is the scrape period; default DefaultInterval.
	Interval time.Duration
	// Window is how long a gauge may sit above 0 with no progress before
	// it is a wedge (Watchdog.Window).
	Window time.Duration
	// LiveLoads reads each engine's GET /v1/loads every round in place of
	// its queue gauges, as the recorder does (Recorder.LiveLoads): set it
	// where every engine serves them and sets its gauges only when it logs.
	LiveLoads bool
	// Base is the time origin of offsets; default the call's start.
	Base time.Time
}

// Watch scrapes every URL each interval and calls onWedge for every wedge
// until ctx ends. check.Scrape failures (and, with LiveLoads, failed loads)
// go to onErr (nil ignores them) and are counted in the summary. It is
// `pdchaos watch` without the CLI.
func Watch(ctx context.Context, urls []string, o WatchOptions, onWedge func(check.Wedge), onErr func(error)) (WatchSummary, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("watch: no metrics URLs")
	}
	interval := o.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	base := o.Base
	if base.IsZero() {
		base = time.Now()
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	wd := &Watchdog{Window: o.Window}
	sum := WatchSummary{}
	start := time.Since(base)
	for _, u := range urls {
		sum[u] = &URLWatch{lastGood: start}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		scrapes := make([]check.Scrape, len(urls))
		g, gctx := errgroup.WithContext(ctx)
		for i, u := range urls {
			g.Go(func() error {
				s, err := scrapeURL(gctx, client, u)
				if err == nil && o.LiveLoads {
					err = overlayLoads(gctx, client, u, &s)
				}
				if err != nil {
					s.Err = err.Error()
					if onErr != nil && ctx.Err() == nil {
						onErr(err)
					}
				}
				scrapes[i] = s
				return nil
			})
		}
		_ = g.Wait()
		at := time.Since(base)
		for i, u := range urls {
			uw := sum[u]
			uw.Blind = max(uw.Blind, at-uw.lastGood)
			if ctx.Err() != nil && scrapes[i].Err != "" {
				continue // cut by the end of the watch, not the target's failure
			}
			uw.Scrapes++
			if scrapes[i].Err != "" {
				uw.Failed++
				uw.LastErr = scrapes[i].Err
			} else {
				uw.lastGood = at
			}
			for _, wg := range wd.Observe(at, u, scrapes[i]) {
				onWedge(wg)
			}
		}
		select {
		case <-ctx.Done():
			return sum, nil
		case <-tick.C:
		}
	}
}

// ScrapeOnce GETs one /metrics URL with c and parses it, within
// MaxScrapeBytes and with ParseMetrics' refusals: what the recorder and
// Watch do each round, for a caller that checks a URL before watching it.
func ScrapeOnce(ctx context.Context, c *http.Client, url string) (check.Scrape, error) {
	return scrapeURL(ctx, c, url)
}

// RoomsOnce GETs base's /debug/rooms with c and decodes it, within
// MaxRoomsBytes: what the recorder reads each round.
func RoomsOnce(ctx context.Context, c *http.Client, base string) (contract.RoomsResponse, error) {
	return fetchRooms(ctx, c, base)
}
