package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// reply is one well-formed answer.
type reply struct {
	status      int
	contentType string
	body        []byte
}

// answer is what a healthy engine and router would say to r, with the
// behaviour's /metrics.
func (s *Server) answer(r *http.Request) reply {
	switch pathKind(r.URL.Path) {
	case "metrics":
		return reply{http.StatusOK, "text/plain; version=0.0.4", s.metrics()}
	case "rooms":
		return reply{http.StatusOK, "application/json", []byte(`{"role":"decode","held":[],"cleared":[]}`)}
	case "probes":
		return reply{http.StatusOK, "application/json", []byte(`{"role":"decode","probes":[]}`)}
	case "info":
		return reply{http.StatusOK, "application/json", []byte(`{"version":"hostile-` + string(s.o.Behaviour) + `","disaggregation_mode":"null"}`)}
	case "sse":
		s.tokens.Add(2)
		if !wantsStream(r) {
			return reply{http.StatusOK, "application/json", []byte(
				`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hostile target"},"finish_reason":"stop"}]}`)}
		}
		return reply{http.StatusOK, "text/event-stream", []byte(
			`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hostile "}}]}` + "\n\n" +
				`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"target"},"finish_reason":"stop"}]}` + "\n\n" +
				"data: [DONE]\n\n")}
	}
	return reply{http.StatusOK, "text/plain", []byte("ok\n")}
}

// wantsStream reports whether r asks for an event stream: a chat
// completion with "stream": true (the agents), not the liveness probe's
// "stream": false. The body is read up to 1 MiB, enough for any request
// the harness sends.
func wantsStream(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return true
	}
	var req struct {
		Stream *bool `json:"stream"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Stream == nil {
		return true
	}
	return *req.Stream
}

// metrics is the /metrics text: every slot gauge and KV usage (0 when
// healthy, else as the behaviour says) and the progress counters.
func (s *Server) metrics() []byte {
	if s.o.Behaviour == GarbageMetrics {
		return []byte("hostile garbage {{{ not prometheus\n\x00\xff\xfe ### }}}\n")
	}
	var b bytes.Buffer
	const labels = `model_name="hostile",tp_rank="0"`
	for _, c := range []string{contract.MetricGenerationTokens, contract.MetricRequests} {
		fmt.Fprintf(&b, "# TYPE %s counter\n%s{%s} %d\n", c, c, labels, s.tokens.Load())
	}
	value := map[Behaviour]string{NaNMetrics: "NaN", InfMetrics: "+Inf", NegativeGauges: "-1"}[s.o.Behaviour]
	if value == "" {
		value = "0"
	}
	for _, g := range append(contract.SlotGauges(), contract.MetricTokenUsage) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{%s} %s\n", g, g, labels, value)
		if s.o.Behaviour == DuplicateSeries {
			fmt.Fprintf(&b, "%s{%s} 3\n", g, labels)
		}
	}
	return b.Bytes()
}

// chunkBytes is the size of each write of an Endless or Huge body.
const chunkBytes = 32 << 10

// stream answers 200 with a body that never ends (limit < 0) or ends
// after exactly limit bytes (Huge, with a Content-Length), generated chunk
// by chunk: distinct metric families, an endless rooms array, SSE chunks
// with no [DONE], or "ok" lines. An Endless stream pauses a Tick between
// chunks; a Huge one writes as fast as the client reads.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, limit int64) {
	kind := pathKind(r.URL.Path)
	head, ct := map[string]string{
		"rooms":  `{"role":"decode","held":[`,
		"probes": `{"role":"decode","probes":[`,
		"info":   `{"version":"`,
	}[kind], map[string]string{"metrics": "text/plain; version=0.0.4", "sse": "text/event-stream",
		"rooms": "application/json", "probes": "application/json", "info": "application/json"}[kind]
	if ct == "" {
		ct = "text/plain"
	}
	w.Header().Set("Content-Type", ct)
	if limit >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(limit, 10))
	}
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	var written int64
	buf := make([]byte, 0, chunkBytes+512)
	buf = append(buf, head...)
	for n := 0; ; {
		for len(buf) < chunkBytes {
			buf = appendItem(buf, kind, n)
			n++
		}
		if limit >= 0 && written+int64(len(buf)) > limit {
			buf = buf[:limit-written] // the last chunk is cut to the exact length
		}
		k, err := w.Write(buf)
		written += int64(k)
		if err != nil || (limit >= 0 && written >= limit) {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		buf = buf[:0]
		if limit >= 0 || s.o.Tick == 0 {
			select {
			case <-s.done:
				return
			default:
			}
			continue
		}
		t := time.NewTimer(s.o.Tick)
		select {
		case <-s.done:
		case <-r.Context().Done():
		case <-t.C:
		}
		t.Stop()
		if s.isDone() || r.Context().Err() != nil {
			return
		}
	}
}

// appendItem appends the n-th item of an endless body of kind.
func appendItem(b []byte, kind string, n int) []byte {
	switch kind {
	case "metrics":
		return fmt.Appendf(b, "# TYPE hostile_filler_%d gauge\nhostile_filler_%d{i=\"%d\"} 0\n", n, n, n)
	case "rooms":
		return fmt.Appendf(b, `{"room":%d,"state":"Transferring","role":"decode"},`, n+1)
	case "probes":
		return fmt.Appendf(b, `{"name":"hostile/%d","hits":1},`, n)
	case "sse":
		return fmt.Appendf(b, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n")
	case "info":
		return append(b, "xxxxxxxxxxxxxxxx"...)
	}
	return append(b, "ok\n"...)
}
