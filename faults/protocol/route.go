package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"

	"github.com/pdchaos/pdchaos/contract"
)

// RouteRewriter is an HTTP reverse proxy for an SGLang prefill bootstrap
// server that rewrites GET /route answers {rank_ip, rank_port}, so a real
// decode sends its ZMQ control traffic to a frame proxy instead of the
// prefill rank. Everything else passes through unchanged.
type RouteRewriter struct {
	rp *httputil.ReverseProxy
	tr *http.Transport
	mu sync.Mutex
	m  map[string]string // "ip:port" -> "ip:port"
	up *url.URL
	// via, when set, is where requests go instead of up's host (a
	// network-fault proxy in front of the bootstrap server).
	via   string
	stats RouteStats
}

// RouteStats counts what the rewriter answered, so a run can tell whether
// decode really looks prefill up through it.
type RouteStats struct {
	// Requests counts every request relayed (lookups, heartbeats, …).
	Requests int64 `json:"requests"`
	// RankLookups counts /route answers naming a rank's address.
	RankLookups int64 `json:"rank_lookups"`
	// Rewritten counts rank answers pointed at a mapped address.
	Rewritten int64 `json:"rewritten"`
	// Unmapped counts rank answers for an address with no mapping: decode
	// then talks to that rank directly, past pdchaos.
	Unmapped int64 `json:"unmapped"`
}

// NewRouteRewriter proxies to the bootstrap server at upstream
// (e.g. http://prefill-host:8998).
func NewRouteRewriter(upstream *url.URL) *RouteRewriter {
	rr := &RouteRewriter{m: make(map[string]string), up: upstream}
	rr.tr = http.DefaultTransport.(*http.Transport).Clone()
	rr.rp = &httputil.ReverseProxy{
		Transport: rr.tr,
		Rewrite: func(r *httputil.ProxyRequest) {
			rr.mu.Lock()
			u, via := *rr.up, rr.via
			rr.stats.Requests++
			rr.mu.Unlock()
			r.SetURL(&u)
			if via != "" {
				r.Out.URL.Host = via
			}
		},
		ModifyResponse: rr.modify,
	}
	return rr
}

// Redirect sends requests from now on to via (host:port of a proxy in
// front of the bootstrap server); empty goes straight there again. Pooled
// connections are dropped so the next request takes the new way.
func (rr *RouteRewriter) Redirect(via string) {
	rr.mu.Lock()
	rr.via = via
	rr.mu.Unlock()
	rr.tr.CloseIdleConnections()
}

// Stats returns the counters.
func (rr *RouteRewriter) Stats() RouteStats {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.stats
}

// Close drops pooled upstream connections.
func (rr *RouteRewriter) Close() { rr.tr.CloseIdleConnections() }

// Map makes answers naming from (rank_ip:rank_port) name to instead.
func (rr *RouteRewriter) Map(from, to string) {
	rr.mu.Lock()
	rr.m[from] = to
	rr.mu.Unlock()
}

// Unmap stops rewriting answers naming from.
func (rr *RouteRewriter) Unmap(from string) {
	rr.mu.Lock()
	delete(rr.m, from)
	rr.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (rr *RouteRewriter) ServeHTTP(w http.ResponseWriter, r *http.Request) { rr.rp.ServeHTTP(w, r) }

// maxRouteAnswer bounds the /route answer the rewriter reads into memory:
// a rank's {rank_ip, rank_port} is tens of bytes, a topology answer a few
// hundred. A larger answer is relayed untouched as it streams.
const maxRouteAnswer = 1 << 20

func (rr *RouteRewriter) modify(resp *http.Response) error {
	req := resp.Request
	if req == nil || req.Method != http.MethodGet || req.URL.Path != contract.PathRoute || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRouteAnswer+1))
	if err != nil {
		_ = resp.Body.Close()
		return fmt.Errorf("read /route answer: %w", err)
	}
	if len(body) > maxRouteAnswer {
		// Not a rank's answer: relay it untouched, without holding it.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return nil
	}
	_ = resp.Body.Close()
	out, err := rr.rewrite(body)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// rewrite changes rank_ip/rank_port of a /route answer when mapped; other
// answers (topology queries, unmapped ranks) come back unchanged.
func (rr *RouteRewriter) rewrite(body []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return body, nil
	}
	var ip string
	var port int
	if json.Unmarshal(obj["rank_ip"], &ip) != nil || json.Unmarshal(obj["rank_port"], &port) != nil {
		return body, nil
	}
	rr.mu.Lock()
	to, ok := rr.m[net.JoinHostPort(ip, strconv.Itoa(port))]
	rr.stats.RankLookups++
	if ok {
		rr.stats.Rewritten++
	} else {
		rr.stats.Unmapped++
	}
	rr.mu.Unlock()
	if !ok {
		return body, nil
	}
	host, p, err := net.SplitHostPort(to)
	if err != nil {
		return nil, fmt.Errorf("rewrite /route to %q: %w", to, err)
	}
	np, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("rewrite /route to %q: bad port: %w", to, err)
	}
	obj["rank_ip"], _ = json.Marshal(host)
	obj["rank_port"], _ = json.Marshal(np)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode rewritten /route answer: %w", err)
	}
	return out, nil
}
