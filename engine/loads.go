package engine

import (
	"net/http"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// serveLoads is SGLang's GET /v1/loads: the role's queues read when asked,
// never the logged gauges, so a harness can judge a logged engine by live
// lengths. The bundled engine has one DP rank; its TP ranks share their
// queues as SGLang's do, and each value is the largest over the TP ranks,
// so a rank that disagrees (rank-desync) is not hidden by rank 0.
// Sections: include=disagg (or all) adds the PD queues; other sections
// SGLang has (memory, spec, lora, queues) are accepted and omitted. Only
// format=json is served.
func serveLoads(mode string, read func() []rankSample, pageSize int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if f := q.Get("format"); f != "" && f != "json" {
			writeError(w, http.StatusBadRequest, "/v1/loads: format "+f+" is not served (only json)")
			return
		}
		if dp := q.Get("dp_rank"); dp != "" && dp != "0" {
			writeError(w, http.StatusNotFound, "/v1/loads: no dp_rank "+dp+" (one DP rank: 0)")
			return
		}
		disagg := false
		for _, inc := range q["include"] {
			for _, s := range strings.Split(inc, ",") {
				switch strings.TrimSpace(s) {
				case "disagg", "all":
					disagg = true
				case "core", "memory", "spec", "lora", "queues", "":
				default:
					writeError(w, http.StatusBadRequest, "/v1/loads: unknown include section "+s+
						" (core, memory, spec, lora, disagg, queues, all)")
					return
				}
			}
		}
		writeJSON(w, loadsOf(mode, read(), pageSize, disagg, time.Now()))
	}
}

// loadsOf builds the answer from the live samples of every TP rank.
func loadsOf(mode string, s []rankSample, pageSize int, disagg bool, now time.Time) contract.LoadsResponse {
	top := func(n string) float64 {
		var v float64
		for _, r := range s {
			v = max(v, r.gauges[n])
		}
		return v
	}
	d := contract.DisaggLoad{Mode: mode,
		PrefillPreallocQueueReqs: int(top(contract.MetricPrefillBootstrapQueue)),
		PrefillInflightQueueReqs: int(top(contract.MetricPrefillInflightQueue)),
		DecodePreallocQueueReqs:  int(top(contract.MetricDecodePreallocQueue)),
		DecodeTransferQueueReqs:  int(top(contract.MetricDecodeTransferQueue)),
	}
	running := int(top(contract.MetricRunning))
	waiting := int(top(contract.MetricQueue)) + d.PrefillPreallocQueueReqs + d.PrefillInflightQueueReqs +
		d.DecodePreallocQueueReqs + d.DecodeTransferQueueReqs
	l := contract.RankLoad{DPRank: 0, NumRunningReqs: running, NumWaitingReqs: waiting, NumTotalReqs: running + waiting,
		NumUsedTokens: int(top(contract.MetricPagesUsed)) * pageSize, TokenUsage: top(contract.MetricTokenUsage)}
	if disagg {
		l.Disaggregation = &d
	}
	return contract.LoadsResponse{Timestamp: now.UTC().Format(time.RFC3339Nano), Version: "pdchaos-engine", DPRankCount: 1,
		Loads: []contract.RankLoad{l},
		Aggregate: map[string]float64{"total_running_reqs": float64(running), "total_waiting_reqs": float64(waiting),
			"total_reqs": float64(running + waiting), "avg_token_usage": l.TokenUsage}}
}
