package contract

// PathLoads is SGLang's live load endpoint. Unlike /metrics it reads the
// scheduler's queues when asked, so its lengths are never stale; the
// harness asks for LoadsQueryDisagg.
const PathLoads = "/v1/loads"

// LoadsQueryDisagg is the query that adds the PD queue lengths.
const LoadsQueryDisagg = "include=disagg"

// LoadsResponse is GET /v1/loads?include=disagg, in SGLang's shape
// (sglang-wire.md section 5): one entry per DP rank, and their aggregate.
// Only the fields the harness reads and the bundled engine fills are typed;
// SGLang sends more (memory, spec, lora, queues), which decoding ignores.
type LoadsResponse struct {
	// Timestamp is when the loads were read (RFC 3339).
	Timestamp string `json:"timestamp"`
	// Version is the engine's version string.
	Version string `json:"version"`
	// DPRankCount is the number of entries in Loads.
	DPRankCount int `json:"dp_rank_count"`
	// Loads has one entry per DP rank.
	Loads []RankLoad `json:"loads"`
	// Aggregate sums or averages Loads (SGLang: total_*, avg_*).
	Aggregate map[string]float64 `json:"aggregate"`
}

// RankLoad is one DP rank's load.
type RankLoad struct {
	DPRank         int `json:"dp_rank"`
	NumRunningReqs int `json:"num_running_reqs"`
	// NumWaitingReqs counts the waiting queue plus the PD bootstrap,
	// prealloc, transfer and retracted queues, as SGLang counts it.
	NumWaitingReqs int     `json:"num_waiting_reqs"`
	NumTotalReqs   int     `json:"num_total_reqs"`
	NumUsedTokens  int     `json:"num_used_tokens"`
	TokenUsage     float64 `json:"token_usage"`
	// Disaggregation is present with include=disagg.
	Disaggregation *DisaggLoad `json:"disaggregation,omitempty"`
}

// DisaggLoad is the PD section of a rank's load. SGLang builds of 2026
// name the prefill bootstrap queue prefill_prealloc_queue_reqs (as the
// reference records) and newer ones prefill_bootstrap_queue_reqs; the
// engine sends the first and readers take either (Bootstrap).
type DisaggLoad struct {
	// Mode is "prefill", "decode" or "null".
	Mode                      string `json:"mode"`
	PrefillPreallocQueueReqs  int    `json:"prefill_prealloc_queue_reqs"`
	PrefillBootstrapQueueReqs *int   `json:"prefill_bootstrap_queue_reqs,omitempty"`
	PrefillInflightQueueReqs  int    `json:"prefill_inflight_queue_reqs"`
	DecodePreallocQueueReqs   int    `json:"decode_prealloc_queue_reqs"`
	DecodeTransferQueueReqs   int    `json:"decode_transfer_queue_reqs"`
	DecodeRetractedQueueReqs  int    `json:"decode_retracted_queue_reqs"`
}

// Bootstrap is the prefill bootstrap queue length under either name.
func (d DisaggLoad) Bootstrap() int {
	if d.PrefillBootstrapQueueReqs != nil {
		return *d.PrefillBootstrapQueueReqs
	}
	return d.PrefillPreallocQueueReqs
}

// LiveGauges maps a /v1/loads answer onto the gauge families it gives live
// values for, summed over DP ranks: the four PD queues, running requests
// and the waiting queue (num_waiting_reqs less the PD and retracted
// queues, which SGLang counts in it), and KV usage (averaged). The second
// result is false when a rank lacks the disaggregation section (the query
// lacked include=disagg, or the engine is not in PD mode), so the caller
// does not read missing queues as zeros.
func (l LoadsResponse) LiveGauges() (map[string]float64, bool) {
	if len(l.Loads) == 0 {
		return nil, false
	}
	g := map[string]float64{}
	for _, r := range l.Loads {
		d := r.Disaggregation
		if d == nil {
			return nil, false
		}
		pd := d.Bootstrap() + d.PrefillInflightQueueReqs + d.DecodePreallocQueueReqs + d.DecodeTransferQueueReqs + d.DecodeRetractedQueueReqs
		g[MetricPrefillBootstrapQueue] += float64(d.Bootstrap())
		g[MetricPrefillInflightQueue] += float64(d.PrefillInflightQueueReqs)
		g[MetricDecodePreallocQueue] += float64(d.DecodePreallocQueueReqs)
		g[MetricDecodeTransferQueue] += float64(d.DecodeTransferQueueReqs)
		g[MetricRunning] += float64(r.NumRunningReqs)
		g[MetricQueue] += float64(max(r.NumWaitingReqs-pd, 0))
		g[MetricTokenUsage] += r.TokenUsage / float64(len(l.Loads))
	}
	return g, true
}
