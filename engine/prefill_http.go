package engine

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Hooks returns the role's pause gates.
func (p *Prefill) Hooks() contract.Hooks {
	h := hookSet{{contract.HookSpec{Hook: contract.HookScheduler, Role: "prefill", Rank: 0, Worker: -1}, &p.schedGate}}
	for r, g := range p.bootGates {
		h = append(h, hookEntry{contract.HookSpec{Hook: contract.HookBootstrapLoop, Role: "prefill", Rank: r, Worker: -1}, g})
	}
	for r, ws := range p.workGates {
		for w, g := range ws {
			h = append(h, hookEntry{contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: r, Worker: w}, g},
				hookEntry{contract.HookSpec{Hook: contract.HookTransferWrites, Role: "prefill", Rank: r, Worker: w}, p.writeGates[r][w]})
		}
	}
	return h
}

func (p *Prefill) routes() http.Handler {
	reg := prometheus.NewRegistry()
	p.gauges = newGaugeLog(p.cfg, p.clock.Now(), p.samples)
	reg.MustRegister(newCollector(p.cfg.Model, "prefill", p.gauges.samples), newProbeCollector(p.cfg.Model, contract.SidePrefill, p.probes))
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+contract.PathGenerate, p.handleGenerate)
	mux.HandleFunc("GET "+contract.PathHealth, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+contract.PathHealthGenerate, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("GET "+contract.PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST "+contract.PathAbortRequest, p.handleAbort)
	mux.HandleFunc("GET "+contract.PathServerInfo, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, serverInfo(p.cfg, "prefill", p.Addrs()))
	})
	if !p.cfg.NoLoads {
		mux.HandleFunc("GET "+contract.PathLoads, serveLoads("prefill", p.samples, p.cfg.PageSize))
	}
	mux.HandleFunc("GET "+contract.PathDebugRooms, loopbackOnly(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		held, cleared := p.hist.Snapshot()
		queues := queueGauges(p.samplesLocked())
		p.mu.Unlock()
		writeJSON(w, contract.RoomsResponse{Role: "prefill", Held: held, Cleared: cleared, Queues: queues})
	}))
	mux.HandleFunc("GET "+contract.PathDebugProbes, loopbackOnly(serveProbes(contract.SidePrefill, p.probes, &p.mu, p.hist)))
	mux.Handle(contract.HooksPath, ServeHooks(p.Hooks()))
	return mux
}

func (p *Prefill) samples() []rankSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.samplesLocked()
}

// samplesLocked is samples with p.mu held.
func (p *Prefill) samplesLocked() []rankSample {
	b, wq, inflight := p.core.QueueLens()
	var out []rankSample
	for r := range p.core.Ranks() {
		alive := 1.0
		if p.core.Dead(r) {
			alive = 0
		}
		s := rankSample{gauges: map[string]float64{
			contract.MetricPrefillBootstrapQueue: float64(b), contract.MetricPrefillInflightQueue: float64(inflight),
			contract.MetricDecodePreallocQueue: 0, contract.MetricDecodeTransferQueue: 0, contract.MetricRunning: 0,
			contract.MetricQueue: float64(wq), contract.MetricTokenUsage: 0, contract.MetricBootstrapLoopAlive: alive, contract.MetricAwaitingAck: 0,
			contract.MetricSchedulerHung: 0,
		}, counters: map[string]float64{
			contract.MetricBootstrapFailed: float64(p.core.BootstrapFailed), contract.MetricTransferFailed: float64(p.core.TransferFailed),
			contract.MetricRequests: float64(p.requests.Load()), contract.MetricGenerationTokens: 0,
			contract.MetricMalformedControl: float64(p.core.Malformed), contract.MetricForeignWrites: 0, contract.MetricStrayChunks: 0, contract.MetricMalformedKV: 0,
			contract.MetricRefusedPeers: float64(p.pulls[r].Refused()),
		}}
		putTables(s.gauges, r, p.core.Tables(r))
		out = append(out, s)
	}
	return out
}

type abortRequest struct {
	Rid      string `json:"rid"`
	AbortAll bool   `json:"abort_all"`
}

func (p *Prefill) handleAbort(w http.ResponseWriter, r *http.Request) {
	var req abortRequest
	_ = readJSON(w, r, &req)
	p.mu.Lock()
	p.core.OnAbortRequest(p.clock.Now(), req.Rid)
	p.mu.Unlock()
	p.kick(p.wake)
	w.WriteHeader(http.StatusOK)
}

// bootstrapRoutes is prefill's bootstrap server: GET /route answers a
// decode of any SGLang era (contract.RouteDialects) with a rank's control
// socket, or the topology in that era's keys when every index is -1;
// /health answers "OK" as SGLang's aiohttp server does.
func (p *Prefill) bootstrapRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+contract.PathHealth, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "OK") })
	mux.HandleFunc("GET "+contract.PathRoute, func(w http.ResponseWriter, r *http.Request) {
		q, err := contract.ParseRouteQuery(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if q.Topology {
			p.mu.Lock()
			t := p.core.RouteTopology()
			p.mu.Unlock()
			writeJSON(w, q.Dialect.Answer(t))
			return
		}
		p.mu.Lock()
		rank, ok := p.core.RouteRank(q)
		p.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("bootstrap info not found for dp_rank=%d cp_rank=%d tp_rank=%d pp_rank=%d (this prefill has %d TP ranks, one DP, CP and PP group)",
				q.Rank.DP, q.Rank.CP, q.Rank.TP, q.Rank.PP, len(p.pulls)))
			return
		}
		host, port, _ := net.SplitHostPort(p.pulls[rank].Addr())
		pn, _ := strconv.Atoi(port)
		writeJSON(w, map[string]any{"rank_ip": host, "rank_port": pn})
	})
	return mux
}

func serverInfo(cfg contract.EngineConfig, role string, addrs any) map[string]any {
	reg, _ := contract.ParseRegressions(cfg.Regressions)
	return map[string]any{"version": "pdchaos-engine", "model_path": cfg.Model, "served_model_name": cfg.Model, "disaggregation_mode": role,
		"tp_size": cfg.TP, "page_size": cfg.PageSize, "regressions": reg.List(), "addrs": addrs,
		"internal_states": []any{}, "enable_metrics": true,
		contract.ServerInfoGauges: cfg.Gauges, contract.ServerInfoDecodeLogInterval: cfg.DecodeLogInterval,
		contract.ServerInfoIdleMetricsInterval: cfg.IdleMetricsInterval.Seconds()}
}
