package engine

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, exactly as SGLang exposes them, so the same watch and checks
// work on a real deployment.
const (
	MetricPrefillBootstrapQueue = "sglang:num_prefill_bootstrap_queue_reqs"
	MetricPrefillInflightQueue  = "sglang:num_prefill_inflight_queue_reqs"
	MetricDecodePreallocQueue   = "sglang:num_decode_prealloc_queue_reqs"
	MetricDecodeTransferQueue   = "sglang:num_decode_transfer_queue_reqs"
	MetricRunning               = "sglang:num_running_reqs"
	MetricQueue                 = "sglang:num_queue_reqs"
	MetricTokenUsage            = "sglang:token_usage"
	MetricBootstrapFailed       = "sglang:num_bootstrap_failed_reqs_total"
	MetricTransferFailed        = "sglang:num_transfer_failed_reqs_total"
	MetricRequests              = "sglang:num_requests_total"
	MetricGenerationTokens      = "sglang:generation_tokens_total"
	// pdchaos additions (not in SGLang): evidence for checks and faults.
	MetricBootstrapLoopAlive = "pdchaos:bootstrap_loop_alive"
	MetricMalformedControl   = "pdchaos:malformed_control_msgs_total"
	MetricStrayChunks        = "pdchaos:stray_kv_chunks_total"
	MetricForeignWrites      = "pdchaos:kv_foreign_writes_total"
	MetricAwaitingAck        = "pdchaos:decode_pages_awaiting_ack_reqs"
	MetricSchedulerHung      = "pdchaos:scheduler_hung"
)

// MetricLabels is SGLang's label set on every engine metric.
var MetricLabels = []string{"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"}

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
	for _, n := range []string{MetricPrefillBootstrapQueue, MetricPrefillInflightQueue, MetricDecodePreallocQueue,
		MetricDecodeTransferQueue, MetricRunning, MetricQueue, MetricTokenUsage, MetricBootstrapFailed,
		MetricTransferFailed, MetricRequests, MetricGenerationTokens, MetricBootstrapLoopAlive,
		MetricMalformedControl, MetricStrayChunks, MetricForeignWrites, MetricAwaitingAck, MetricSchedulerHung} {
		c.descs[n] = prometheus.NewDesc(n, "pdchaos bundled engine: "+n, MetricLabels, nil)
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
