package engine

import (
	"strconv"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// rankSample is one rank's values at scrape time.
type rankSample struct {
	gauges   map[string]float64
	counters map[string]float64
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
