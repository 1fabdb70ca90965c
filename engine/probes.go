package engine

import (
	"net/http"
	"sync"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probeCollector exports a role's code probe hits as MetricProbeHits, one
// series per probe of the role, zero ones too, read at scrape time.
type probeCollector struct {
	model, side string
	probes      *core.ProbeCounts
	desc        *prometheus.Desc
	table       []contract.Probe
}

func newProbeCollector(model, side string, probes *core.ProbeCounts) *probeCollector {
	return &probeCollector{model: model, side: side, probes: probes, table: contract.ProbesOf(side),
		desc: prometheus.NewDesc(contract.MetricProbeHits, "pdchaos bundled engine: hits of each code probe (pdchaos probes lists them)",
			append(append([]string{}, contract.MetricLabels...), contract.LabelProbe), nil)}
}

func (c *probeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *probeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.table {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.probes.Count(p.ID)),
			c.model, c.side, "0", "0", "0", p.Name)
	}
}

// probeMetrics serves /metrics with only the probe counters (the router's).
func probeMetrics(model, side string, probes *core.ProbeCounts) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newProbeCollector(model, side, probes))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// serveProbes answers PathDebugProbes: every probe of the role with its
// hits and, for a role with a room history, the events it recorded. The
// core hits its probes and writes their events under mu, so both are read
// under it (nil mu and hist: the router, which has neither).
func serveProbes(side string, probes *core.ProbeCounts, mu sync.Locker, hist *core.History) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if mu != nil {
			mu.Lock()
		}
		resp := contract.ProbesResponse{Role: side, Probes: probes.Side(side), Recorded: hist.Recorded()}
		if mu != nil {
			mu.Unlock()
		}
		writeJSON(w, resp)
	}
}
