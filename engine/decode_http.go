package engine

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Hooks returns the role's pause gates.
func (d *Decode) Hooks() contract.Hooks {
	return hookSet{{contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0, Worker: -1}, &d.schedGate}}
}

func (d *Decode) routesHandler() http.Handler {
	reg := prometheus.NewRegistry()
	d.gauges = newGaugeLog(d.cfg, d.clock.Now(), d.samples)
	reg.MustRegister(newCollector(d.cfg.Model, "decode", d.gauges.samples), newProbeCollector(d.cfg.Model, contract.SideDecode, d.probes))
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+contract.PathGenerate, d.handleGenerate)
	mux.HandleFunc("GET "+contract.PathHealth, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+contract.PathHealthGenerate, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("GET "+contract.PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST "+contract.PathAbortRequest, func(w http.ResponseWriter, r *http.Request) {
		var req abortRequest
		_ = readJSON(w, r, &req)
		d.mu.Lock()
		d.core.OnAbortRequest(d.clock.Now(), req.Rid)
		d.mu.Unlock()
		d.kick()
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET "+contract.PathServerInfo, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, serverInfo(d.cfg, "decode", d.Addrs()))
	})
	if !d.cfg.NoLoads {
		mux.HandleFunc("GET "+contract.PathLoads, serveLoads("decode", d.samples, d.cfg.PageSize))
	}
	mux.HandleFunc("GET "+contract.PathDebugRooms, loopbackOnly(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		held, cleared := d.hist.Snapshot()
		queues := queueGauges(d.samplesLocked())
		d.mu.Unlock()
		writeJSON(w, contract.RoomsResponse{Role: "decode", Held: held, Cleared: cleared, Queues: queues})
	}))
	mux.HandleFunc("GET "+contract.PathDebugProbes, loopbackOnly(serveProbes(contract.SideDecode, d.probes, &d.mu, d.hist)))
	mux.Handle(contract.HooksPath, ServeHooks(d.Hooks()))
	return mux
}

func (d *Decode) samples() []rankSample {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.samplesLocked()
}

// samplesLocked is samples with d.mu held.
func (d *Decode) samplesLocked() []rankSample {
	var out []rankSample
	hung := 0.0
	if d.core.Hung() {
		hung = 1
	}
	for r := range d.core.Ranks() {
		l := d.core.Lens(r)
		out = append(out, rankSample{gauges: map[string]float64{
			contract.MetricPrefillBootstrapQueue: 0, contract.MetricPrefillInflightQueue: 0,
			contract.MetricDecodePreallocQueue: float64(l.Prealloc), contract.MetricDecodeTransferQueue: float64(l.Transfer),
			contract.MetricRunning: float64(l.Running), contract.MetricQueue: 0,
			contract.MetricTokenUsage:         float64(l.PagesUsed) / float64(l.PagesTotal),
			contract.MetricBootstrapLoopAlive: 1, contract.MetricAwaitingAck: float64(l.AwaitingAck), contract.MetricSchedulerHung: hung,
			contract.MetricPagesUsed: float64(l.Pages.Used), contract.MetricPagesFree: float64(l.Pages.Free),
			contract.MetricPagesTotal: float64(l.Pages.Total), contract.MetricPagesOwnedTwice: float64(l.Pages.OwnedTwice),
		}, counters: map[string]float64{
			contract.MetricBootstrapFailed: 0, contract.MetricTransferFailed: float64(d.core.TransferFailed),
			contract.MetricRequests: float64(d.requests.Load()), contract.MetricGenerationTokens: float64(d.tokens.Load()),
			contract.MetricMalformedControl: float64(d.core.Malformed), contract.MetricForeignWrites: float64(d.core.ForeignWrites), contract.MetricStrayChunks: float64(d.core.StrayChunks),
			contract.MetricMalformedKV: float64(d.core.MalformedKV), contract.MetricRefusedPeers: float64(d.pulls[r].Refused()),
		}})
		putTables(out[len(out)-1].gauges, r, d.core.Tables(r))
	}
	return out
}

func (d *Decode) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req contract.GenerateRequest
	if err := readJSON(w, r, &req); err != nil {
		badBody(w, "/generate body", err)
		return
	}
	if req.BootstrapRoom == nil || req.BootstrapHost == "" || req.BootstrapPort == 0 {
		writeError(w, http.StatusBadRequest, "decode /generate needs bootstrap_host, bootstrap_port and bootstrap_room (send requests through the router)")
		return
	}
	room := *req.BootstrapRoom
	bootstrap := net.JoinHostPort(req.BootstrapHost, strconv.Itoa(req.BootstrapPort))
	maxNew := req.SamplingParams.MaxNewTokens
	if maxNew <= 0 {
		maxNew = d.cfg.MaxNewTokens
	}
	rid := req.Rid
	if rid == "" {
		rid = "decode-" + strconv.FormatUint(d.ridSeq.Add(1), 10)
	}
	if err := d.resolve(r.Context(), bootstrap); err != nil {
		d.probes.Hit(contract.ProbeDecodeRouteFailed)
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	tokens := model.Tokenize(req.Text)
	st := &decodeStream{tokens: make(chan core.TokenOut, maxNew+1), done: make(chan error, 1), last: make(chan struct{}, 1)}
	d.mu.Lock()
	err := d.core.Add(d.clock.Now(), rid, room, bootstrap, tokens, maxNew)
	if err == nil {
		d.streams[rid] = st
	}
	d.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	d.requests.Add(1)
	d.kick()
	clientGone := func() {
		d.mu.Lock()
		d.core.OnClientGone(d.clock.Now(), rid)
		d.mu.Unlock()
		d.kick()
	}
	var text strings.Builder
	meta := contract.MetaInfo{ID: rid, PromptTokens: len(tokens), BootstrapRoom: room}
	flusher, _ := w.(http.Flusher)
	started := false
	// A streamed answer takes each token as it comes; a plain one is
	// written at the end, so its handler wakes once, when the last token
	// is queued, and takes them all then.
	var event []byte // a streamed event's bytes, the buffer kept for the next
	next, last := st.tokens, (chan struct{})(nil)
	if !req.Stream {
		next, last = nil, st.last
	}
	for {
		var t core.TokenOut
		select {
		case <-r.Context().Done():
			clientGone()
			return
		case <-d.ctx.Done():
			if !started {
				writeError(w, http.StatusServiceUnavailable, "decode shutting down")
			}
			return
		case err := <-st.done:
			msg := fmt.Sprintf("decode room %d: %v", room, err)
			if !started {
				writeError(w, http.StatusInternalServerError, msg)
				return
			}
			b, _ := json.Marshal(contract.ErrorBody{Error: contract.ErrorDetail{Message: msg, Type: "InternalServerError", Code: 500}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			if flusher != nil {
				flusher.Flush()
			}
			return
		case <-last:
			// Every token is queued, the Done token last.
			for t = range st.tokens {
				text.WriteString(t.Piece)
				if t.Done {
					break
				}
			}
			meta.CompletionTokens = t.Index + 1
			meta.FinishReason = &contract.FinishReason{Type: "length", Length: meta.CompletionTokens}
			writeJSON(w, contract.GenerateChunk{Text: text.String(), MetaInfo: meta})
			return
		case t = <-next: // streamed only
			text.WriteString(t.Piece)
			meta.CompletionTokens = t.Index + 1
			if t.Done {
				meta.FinishReason = &contract.FinishReason{Type: "length", Length: meta.CompletionTokens}
			}
			if !started {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				started = true
			}
			// "data: " and the chunk as json.Marshal writes it.
			ev := append(event[:0], "data: "...)
			chunk := contract.GenerateChunk{Text: text.String(), MetaInfo: meta}
			if b, ok := appendGenerateChunk(ev, chunk); ok {
				ev = b
			} else {
				b, _ := json.Marshal(chunk)
				ev = append(ev, b...)
			}
			ev = append(ev, "\n\n"...)
			if t.Done {
				ev = append(ev, "data: [DONE]\n\n"...)
			}
			event = ev
			_, _ = w.Write(ev)
			// One flush per batch of ready tokens, not per token: a
			// write syscall per token was most of decode's CPU with the
			// model at full speed; a token waits only for those already
			// queued behind it.
			if flusher != nil && (t.Done || len(st.tokens) == 0) {
				flusher.Flush()
			}
			if t.Done {
				return
			}
		}
	}
}
