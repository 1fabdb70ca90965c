package record

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestParseMetricsCombinesAsSGLang: old names read as today's, a priority
// series repeating a total is not counted twice, gauges are kept per rank,
// the engine type is read from its label, and an absent family stays absent.
func TestParseMetricsCombinesAsSGLang(t *testing.T) {
	t.Parallel()
	const text = `# TYPE sglang:num_prefill_prealloc_queue_reqs gauge
sglang:num_prefill_prealloc_queue_reqs{engine_type="prefill",tp_rank="0"} 2
sglang:num_prefill_prealloc_queue_reqs{engine_type="prefill",tp_rank="1"} 1
# TYPE sglang:num_prefill_infight_queue_reqs gauge
sglang:num_prefill_infight_queue_reqs{engine_type="prefill",dp="0"} 4
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="prefill",tp_rank="0"} 5
sglang:num_running_reqs{engine_type="prefill",tp_rank="0",priority="0"} 3
sglang:num_running_reqs{engine_type="prefill",tp_rank="0",priority="1"} 2
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="prefill",tp_rank="0",priority="0"} 1
sglang:num_queue_reqs{engine_type="prefill",tp_rank="0",priority="1"} 2
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="prefill",dp_rank="1",tp_rank="0",pp_rank="1"} 0.5
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{engine_type="prefill",tp_rank="0"} 7
sglang:num_requests_total{engine_type="prefill",tp_rank="1"} 3
`
	s, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"alias bootstrap sum", s.Gauges[contract.MetricPrefillBootstrapQueue], 3},
		{"alias bootstrap rank 1", s.Ranks[contract.MetricPrefillBootstrapQueue]["tp_rank=1"], 1},
		{"typo inflight", s.Gauges[contract.MetricPrefillInflightQueue], 4},
		{"priority repeats the total", s.Gauges[contract.MetricRunning], 5},
		{"priority only: summed", s.Gauges[contract.MetricQueue], 3},
		{"rank key with dp and pp", s.Ranks[contract.MetricTokenUsage]["dp_rank=1,pp_rank=1,tp_rank=0"], 0.5},
		{"counters summed over ranks", s.Counters[contract.MetricRequests], 10},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, tc.got, tc.want)
		}
	}
	if _, ok := s.Gauges["sglang:num_prefill_prealloc_queue_reqs"]; ok {
		t.Error("the old name is kept beside today's")
	}
	if s.Ranks[contract.MetricPrefillInflightQueue][""] != 4 {
		t.Errorf("a series without rank labels: %v", s.Ranks[contract.MetricPrefillInflightQueue])
	}
	if s.EngineType != "prefill" {
		t.Errorf("engine type %q", s.EngineType)
	}
	if s.Has(contract.MetricDecodeTransferQueue) {
		t.Error("an absent family reads as present")
	}
}

// TestParseMetricsTodayWins: where an engine exports both names, today's
// is read and the alias is not added to it.
func TestParseMetricsTodayWins(t *testing.T) {
	t.Parallel()
	const text = `# TYPE sglang:num_prefill_prealloc_queue_reqs gauge
sglang:num_prefill_prealloc_queue_reqs{tp_rank="0"} 9
# TYPE sglang:num_prefill_bootstrap_queue_reqs gauge
sglang:num_prefill_bootstrap_queue_reqs{tp_rank="0"} 2
`
	s, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Gauges[contract.MetricPrefillBootstrapQueue]; got != 2 {
		t.Fatalf("bootstrap queue %g, want 2", got)
	}
}
