package engine

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/prometheus/client_golang/prometheus"
)

// rankSample is one rank's values at scrape time.
type rankSample struct {
	gauges   map[string]float64
	counters map[string]float64
}

// queueGauges is each rank's gauges of contract.QueueGaugesJudged, for
// /debug/rooms to give with the rooms read under the same lock.
func queueGauges(samples []rankSample) []map[string]float64 {
	out := make([]map[string]float64, len(samples))
	for r, s := range samples {
		out[r] = map[string]float64{}
		for _, g := range contract.QueueGaugesJudged() {
			if v, ok := s.gauges[g]; ok {
				out[r][g] = v
			}
		}
	}
	return out
}

// collector reads a role's state at scrape time, so gauges are never stale
// and there is no second copy of the queues to keep in sync.
type collector struct {
	model, engineType string
	read              func() []rankSample
	descs             map[string]*prometheus.Desc
}

func newCollector(model, engineType string, read func() []rankSample) *collector {
	c := &collector{model: model, engineType: engineType, read: read, descs: map[string]*prometheus.Desc{}}
	for _, n := range append(contract.EngineGauges(), contract.EngineCounters()...) {
		c.descs[n] = prometheus.NewDesc(n, "pdchaos bundled engine: "+n, contract.MetricLabels, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for rank, s := range c.read() {
		labels := []string{c.model, c.engineType, strconv.Itoa(rank), "0", "0"}
		for n, v := range s.gauges {
			ch <- prometheus.MustNewConstMetric(c.descs[n], prometheus.GaugeValue, v, labels...)
		}
		for n, v := range s.counters {
			ch <- prometheus.MustNewConstMetric(c.descs[n], prometheus.CounterValue, v, labels...)
		}
	}
}

// gaugeLog is what the collector exports for one role: with live gauges
// the role's state at scrape time; with logged gauges SGLang's own gauges
// (the sglang:* families) as they were at the role's last log point, and
// everything else (counters, pdchaos additions, which a real deployment
// does not have) live. SGLang increments its counters where they happen,
// so only gauges go stale.
type gaugeLog struct {
	mode  contract.GaugeMode
	every int           // decode batches per log
	idle  time.Duration // idle refresh period
	read  func() []rankSample

	mu      sync.Mutex
	logged  []rankSample // the sglang:* gauges as last set
	at      time.Time    // when they were set
	batches int          // decode batches since then
}

func newGaugeLog(cfg contract.EngineConfig, now time.Time, read func() []rankSample) *gaugeLog {
	g := &gaugeLog{mode: cfg.Gauges, every: max(cfg.DecodeLogInterval, 1), idle: cfg.IdleMetricsInterval, read: read}
	if g.mode == contract.GaugesLogged {
		// SGLang's collector starts at zero gauges; so does an idle role.
		g.set(now, read())
	}
	return g
}

// set stores the sglang:* gauges of s as the logged ones.
func (g *gaugeLog) set(now time.Time, s []rankSample) {
	logged := make([]rankSample, len(s))
	for i, r := range s {
		logged[i].gauges = map[string]float64{}
		for n, v := range r.gauges {
			if strings.HasPrefix(n, sglangPrefix) {
				logged[i].gauges[n] = v
			}
		}
	}
	g.mu.Lock()
	g.logged, g.at, g.batches = logged, now, 0
	g.mu.Unlock()
}

const sglangPrefix = "sglang:"

// prefillBatch is SGLang's log point after every prefill batch.
func (g *gaugeLog) prefillBatch(now time.Time) {
	if g.mode == contract.GaugesLogged {
		g.set(now, g.read())
	}
}

// decodeBatch counts one decode batch and logs every `every` batches, as
// SGLang's --decode-log-interval.
func (g *gaugeLog) decodeBatch(now time.Time) {
	if g.mode != contract.GaugesLogged {
		return
	}
	g.mu.Lock()
	g.batches++
	due := g.batches >= g.every
	g.mu.Unlock()
	if due {
		g.set(now, g.read())
	}
}

// idleTick is a scheduler iteration that ran no batch: SGLang refreshes
// its gauges then (_maybe_log_idle_metrics) at most once per idle period
// since the last log, and only when every queue is empty, so a queue that
// is stuck non-empty keeps whatever value was logged last.
func (g *gaugeLog) idleTick(now time.Time) {
	if g.mode != contract.GaugesLogged {
		return
	}
	g.mu.Lock()
	due := now.Sub(g.at) >= g.idle
	g.mu.Unlock()
	if !due {
		return
	}
	s := g.read()
	if busy(s) {
		return
	}
	g.set(now, s)
}

// busy reports whether any SGLang queue or running gauge of s is above 0.
func busy(s []rankSample) bool {
	for _, r := range s {
		for _, n := range contract.SlotGauges() {
			if strings.HasPrefix(n, sglangPrefix) && r.gauges[n] > 0 {
				return true
			}
		}
	}
	return false
}

// samples is what a scrape exports.
func (g *gaugeLog) samples() []rankSample {
	s := g.read()
	if g.mode != contract.GaugesLogged {
		return s
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range s {
		if i >= len(g.logged) {
			break
		}
		for n, v := range g.logged[i].gauges {
			s[i].gauges[n] = v
		}
	}
	return s
}

// putTables adds a rank's table gauges (core.Tables.Gauges) to g.
func putTables(g map[string]float64, rank int, t core.Tables) {
	for n, v := range t.Gauges(rank) {
		g[n] = v
	}
}
