package record

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"golang.org/x/sync/errgroup"
)

// Sources is what the recorder reads from a target: the URLs to scrape.
// harness/target's Target satisfies it; record does not import the targets.
type Sources interface {
	// MetricsURLs lists each engine's /metrics.
	MetricsURLs() []string
	// EngineURLs lists engine base URLs serving /debug/rooms (may be empty).
	EngineURLs() []string
}

// Recorder scrapes every engine's /metrics (and /debug/rooms where the
// target has it) each Interval into the event log, and feeds the watchdog,
// so a wedge is flagged the moment it shows. Run it under the run's errgroup.
type Recorder struct {
	// Target gives the URLs to scrape.
	Target Sources
	// Log receives every scrape, rooms snapshot and wedge.
	Log *EventLog
	// Interval is the scrape period; zero means 250ms.
	Interval time.Duration
	// Watchdog, if set, sees every scrape and flags wedges.
	Watchdog *Watchdog
	// OnWedge is called (from the recorder goroutine) for each wedge.
	OnWedge func(check.Wedge)
	// LiveLoads makes every round also read each engine's GET /v1/loads
	// (at the metrics URL's base) and put its live queue lengths in place
	// of the gauges /metrics gave, which on an engine that sets gauges at
	// its log points can be stale (the originals stay in Scrape.Logged).
	// A round whose loads fail records the scrape as failed rather than
	// judging stale gauges. Set it where every engine serves the loads.
	LiveLoads bool

	client *http.Client
	mu     sync.Mutex
	round  int
	start  time.Duration // offset at which the last completed round began
	last   map[string]check.Scrape
	rooms  map[string]check.RoomsSnap
	wedges []check.Wedge
	ended  map[string]map[uint64]time.Time // per source: ended rooms logged, by last update
}

// Run records until ctx ends.
func (r *Recorder) Run(ctx context.Context) error {
	if r.Interval <= 0 {
		r.Interval = DefaultInterval
	}
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		r.Once(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (r *Recorder) httpClient() *http.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		r.client = &http.Client{Timeout: 2 * time.Second}
	}
	return r.client
}

// Close drops idle connections (no goroutine outlives the run).
func (r *Recorder) Close() {
	r.httpClient().CloseIdleConnections()
}

// Once does one round: scrape every source, log it, feed the watchdog.
func (r *Recorder) Once(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	c := r.httpClient()
	start := r.Log.Since()
	murls, eurls := r.Target.MetricsURLs(), r.Target.EngineURLs()
	scrapes := make([]check.Scrape, len(murls))
	full := make([]contract.RoomsResponse, len(eurls))
	rerrs := make([]error, len(eurls))
	var g errgroup.Group
	for i, u := range murls {
		g.Go(func() error {
			s, err := scrapeURL(ctx, c, u)
			if err == nil && r.LiveLoads {
				err = overlayLoads(ctx, c, u, &s)
			}
			if err != nil {
				s.Err = err.Error()
			}
			scrapes[i] = s
			return nil
		})
	}
	for i, u := range eurls {
		g.Go(func() error {
			full[i], rerrs[i] = fetchRooms(ctx, c, u)
			return nil
		})
	}
	_ = g.Wait()
	if ctx.Err() != nil {
		return
	}
	at := r.Log.Since()
	var wedges []check.Wedge
	for i, u := range murls {
		s := scrapes[i]
		r.Log.Add(check.Event{T: at, Type: check.EvScrape, Source: u, Scrape: &s})
		if r.Watchdog != nil {
			wedges = append(wedges, r.Watchdog.Observe(at, u, s)...)
		}
	}
	rooms := make([]check.RoomsSnap, len(eurls))
	for i, u := range eurls {
		if rerrs[i] == nil && r.Watchdog != nil {
			wedges = append(wedges, r.Watchdog.ObserveRooms(at, u, full[i].Role, full[i].Held)...)
		}
		rooms[i] = r.snap(u, full[i], rerrs[i], false)
		rs := rooms[i]
		r.Log.Add(check.Event{T: at, Type: check.EvRooms, Source: u, Rooms: &rs})
	}
	for _, w := range wedges {
		r.Log.Add(check.Event{T: at, Type: check.EvWedge, Source: w.Source, Wedge: &w})
	}
	r.mu.Lock()
	r.round++
	r.start = start
	r.last = map[string]check.Scrape{}
	for i, u := range murls {
		r.last[u] = scrapes[i]
	}
	r.rooms = map[string]check.RoomsSnap{}
	for i, u := range eurls {
		r.rooms[u] = rooms[i]
	}
	r.wedges = append(r.wedges, wedges...)
	r.mu.Unlock()
	for _, w := range wedges {
		if r.OnWedge != nil {
			r.OnWedge(w)
		}
	}
}

// snap turns one engine's rooms into a log record: full keeps held rooms'
// histories; Ended gets the cleared rooms not logged yet for source (or
// changed since, by a late event), with their histories.
func (r *Recorder) snap(source string, rr contract.RoomsResponse, err error, full bool) check.RoomsSnap {
	if err != nil {
		return check.RoomsSnap{Err: err.Error()}
	}
	s := check.RoomsSnap{Role: rr.Role, Held: rr.Held, Cleared: len(rr.Cleared), Final: full}
	if rr.Queues != nil {
		// The bundled engine read its queues with its rooms: keep what
		// the events say of each room before they are dropped.
		s.SetQueues(rr.Held, rr.Queues)
	}
	if !full {
		for i := range s.Held {
			s.Held[i].Events = nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended == nil {
		r.ended = map[string]map[uint64]time.Time{}
	}
	logged := r.ended[source]
	if logged == nil {
		logged = map[uint64]time.Time{}
		r.ended[source] = logged
	}
	for _, c := range rr.Cleared {
		if t, ok := logged[c.Room]; ok && t.Equal(c.Updated) {
			continue
		}
		logged[c.Room] = c.Updated
		s.Ended = append(s.Ended, c)
	}
	return s
}

// Settled reports whether the last round that began at or after since shows
// every slot gauge at 0 and no room held, and if not, what is still busy.
// ok is false until such a round exists.
func (r *Recorder) Settled(since time.Duration) (settled, ok bool, busy string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.round == 0 || r.start < since {
		return false, false, "waiting for a fresh scrape"
	}
	var b []string
	for u, s := range r.last {
		if s.Err != "" {
			b = append(b, "scrape failed: "+s.Err)
			continue
		}
		for _, g := range contract.SlotGauges() {
			if v := s.Gauges[g]; v != 0 {
				b = append(b, fmt.Sprintf("%s=%g on %s", g, v, u))
			}
		}
	}
	for u, rs := range r.rooms {
		if rs.Err != "" {
			b = append(b, "rooms failed: "+rs.Err)
		} else if len(rs.Held) > 0 {
			b = append(b, fmt.Sprintf("%d rooms held on %s", len(rs.Held), u))
		}
	}
	sort.Strings(b)
	return len(b) == 0, true, strings.Join(b, "; ")
}

// Wedges returns every wedge flagged so far.
func (r *Recorder) Wedges() []check.Wedge {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]check.Wedge(nil), r.wedges...)
}

// Latest returns the last scrape of each source (for the status line).
func (r *Recorder) Latest() map[string]check.Scrape {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]check.Scrape, len(r.last))
	for k, v := range r.last {
		out[k] = v
	}
	return out
}

// FinalRooms logs a full rooms snapshot (held rooms with their histories)
// of every engine, for rooms-terminal.
func (r *Recorder) FinalRooms(ctx context.Context) {
	c := r.httpClient()
	urls := r.Target.EngineURLs()
	resps := make([]contract.RoomsResponse, len(urls))
	errs := make([]error, len(urls))
	held := map[uint64]bool{}
	for i, u := range urls {
		resps[i], errs[i] = fetchRooms(ctx, c, u)
		for _, h := range resps[i].Held {
			held[h.Room] = true
		}
	}
	for i, u := range urls {
		rs := r.snap(u, resps[i], errs[i], true)
		if errs[i] == nil {
			// A room one engine still holds may be cleared on its peer: keep
			// the peer's history of it, so reports show both sides.
			for _, cl := range resps[i].Cleared {
				if held[cl.Room] && len(rs.PeerCleared) < maxPeerCleared {
					rs.PeerCleared = append(rs.PeerCleared, cl)
				}
			}
		}
		r.Log.Add(check.Event{Type: check.EvRooms, Source: u, Rooms: &rs})
	}
}

// maxPeerCleared bounds the cleared rooms a final snapshot keeps because a
// peer still holds them.
const maxPeerCleared = 200
