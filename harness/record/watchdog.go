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

// Watchdog watches scrapes for wedges. It is pure: Observe takes the time,
// so it is table-tested without a clock. A gauge is stuck when it is above 0
// and neither it nor the source's progress counters moved for Window; each
// stuck episode is flagged once, at the first scrape that shows it.
type Watchdog struct {
	// Window is how long a gauge may sit still; zero means 5s.
	Window time.Duration
	// Gauges and Progress default to contract.SlotGauges and contract.ProgressCounters.
	Gauges   []string
	Progress []string

	src map[string]*srcState
}

type srcState struct {
	progress   float64
	progressAt time.Duration
	gauges     map[string]*gaugeState
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
	var out []check.Wedge
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

// Watch scrapes every URL each interval and calls onWedge for every wedge
// until ctx ends; base is the time origin of offsets. check.Scrape failures go to
// onErr (nil ignores them). It is `pdchaos watch` without the CLI.
func Watch(ctx context.Context, urls []string, interval, window time.Duration, base time.Time,
	onWedge func(check.Wedge), onErr func(error)) error {
	if len(urls) == 0 {
		return fmt.Errorf("watch: no metrics URLs")
	}
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	wd := &Watchdog{Window: window}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		scrapes := make([]check.Scrape, len(urls))
		g, gctx := errgroup.WithContext(ctx)
		for i, u := range urls {
			g.Go(func() error {
				s, err := scrapeURL(gctx, client, u)
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
			for _, wg := range wd.Observe(at, u, scrapes[i]) {
				onWedge(wg)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
