package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/sse"
)

// RouterConfig tells the router where its prefill and decode are.
type RouterConfig struct {
	// Listen is the router's address; empty = OS-chosen port on Config.Host.
	Listen string `json:"listen"`
	// PrefillHTTP and DecodeHTTP are host:port of the engines' HTTP servers.
	PrefillHTTP string `json:"prefill_http"`
	DecodeHTTP  string `json:"decode_http"`
	// PrefillBootstrap is host:port of prefill's bootstrap server, passed to
	// decode with every request.
	PrefillBootstrap string `json:"prefill_bootstrap"`
}

// Router is a small PD router like SGLang's (the model gateway,
// sgl-model-gateway / smg; formerly mini_lb): it picks a random bootstrap
// room, sends the same request to prefill and decode at once and streams
// decode's answer. Like the gateway, /health and /liveness are liveness
// only and /readiness asks prefill and decode. A client that goes away cancels both upstream
// requests; that is how aborts reach the engines.
type Router struct {
	cfg    contract.EngineConfig
	rc     RouterConfig
	log    *slog.Logger
	srv    *http.Server
	ln     net.Listener
	client *http.Client
	tr     *http.Transport
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc

	mu  sync.Mutex
	rng *rand.Rand

	probes *core.ProbeCounts
}

// StartRouter starts a router.
func StartRouter(ctx context.Context, cfg contract.EngineConfig, rc RouterConfig, log *slog.Logger) (*Router, error) {
	return startRouter(ctx, cfg, rc, newLinkTable(), log)
}

func startRouter(ctx context.Context, cfg contract.EngineConfig, rc RouterConfig, links *linkTable, log *slog.Logger) (*Router, error) {
	cfg, _, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	for name, a := range map[string]string{"prefill http": rc.PrefillHTTP, "decode http": rc.DecodeHTTP, "prefill bootstrap": rc.PrefillBootstrap} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("start router: %s address %q: %w", name, a, err)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Router{cfg: cfg, rc: rc, log: log.With("role", "router"), rng: rand.New(rand.NewPCG(cfg.Seed, 0x726f75746572)),
		probes: &core.ProbeCounts{}}
	rt.ctx, rt.cancel = context.WithCancel(context.WithoutCancel(ctx))
	rt.tr = &http.Transport{DialContext: links.dial, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	rt.client = &http.Client{Transport: rt.tr}
	links.watch(rt.tr.CloseIdleConnections)
	if rt.ln, err = listen(ctx, cfg.Host, rc.Listen); err != nil {
		return nil, fmt.Errorf("start router: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+contract.PathChatCompletions, rt.handleChat)
	mux.HandleFunc("POST "+contract.PathCompletions, rt.handleCompletion)
	mux.HandleFunc("POST "+contract.PathGenerate, rt.handleGenerate)
	mux.HandleFunc("GET "+contract.PathHealth, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+contract.PathLiveness, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+contract.PathReadiness, rt.handleReadiness)
	// The one model, as OpenAI's Model object (clients' models.list and
	// models.retrieve read id, object, created and owned_by).
	served := map[string]any{"id": cfg.Model, "object": "model", "created": time.Now().Unix(), "owned_by": "pdchaos"}
	mux.HandleFunc("GET "+contract.PathModels, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{served}})
	})
	mux.HandleFunc("GET "+contract.PathModels+"/{id...}", func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); id != cfg.Model {
			writeError(w, http.StatusNotFound, fmt.Sprintf("model %q not found (this engine serves %q)", id, cfg.Model))
			return
		}
		writeJSON(w, served)
	})
	mux.Handle("GET "+contract.PathMetrics, probeMetrics(cfg.Model, contract.SideRouter, rt.probes))
	mux.HandleFunc("GET "+contract.PathDebugProbes, loopbackOnly(serveProbes(contract.SideRouter, rt.probes, nil, nil)))
	rt.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	rt.wg.Add(1)
	go func() { defer rt.wg.Done(); _ = rt.srv.Serve(rt.ln) }()
	return rt, nil
}

// Addr is the router's host:port.
func (rt *Router) Addr() string { return rt.ln.Addr().String() }

// Close stops the router, cutting open streams.
func (rt *Router) Close(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := rt.srv.Shutdown(sctx); err != nil {
		_ = rt.srv.Close()
	}
	rt.cancel()
	rt.wg.Wait()
	rt.tr.CloseIdleConnections()
	return nil
}

func (rt *Router) room() uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.rng.Uint64() >> 1 // 63 bits, as SGLang
}

// dispatch sends req to prefill and decode at once and returns decode's
// response. Like mini_lb, the prefill request outlives the client's answer
// (prefill replies once its KV is sent, which may be after decode is done),
// but a client that goes away before its answer is complete cancels it.
// What each answer, failure or cancel does to the other leg, and whose
// answer the client gets, is core.Legs' decision (the simulator drives the
// same code); dispatch carries it out. The returned call's done must be
// called when the answer has been written.
func (rt *Router) dispatch(r *http.Request, req contract.GenerateRequest) (*http.Response, *call, error) {
	host, port, _ := net.SplitHostPort(rt.rc.PrefillBootstrap)
	req.BootstrapHost = host
	req.BootstrapPort, _ = strconv.Atoi(port)
	prefillReq := req
	prefillReq.Stream = false
	pb, _ := json.Marshal(prefillReq)
	db, _ := json.Marshal(req)
	pctx, cancelPrefill := context.WithCancel(rt.ctx)
	dctx, cancelDecode := context.WithCancel(r.Context())
	c := &call{r: r, legs: core.NewLegs(rt.probes), cancelPrefill: cancelPrefill, cancelDecode: cancelDecode, answered: make(chan struct{})}
	rt.wg.Add(2)
	go func() {
		defer rt.wg.Done()
		defer cancelPrefill()
		resp, err := rt.post(pctx, rt.rc.PrefillHTTP, pb)
		status := 0
		var body []byte
		if err != nil {
			rt.log.Debug("prefill request failed", "err", err)
		} else {
			defer resp.Body.Close()
			status = resp.StatusCode
			if status >= 400 && status < 500 {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
			}
		}
		c.mu.Lock()
		refusal, a := c.legs.PrefillAnswered(status)
		if refusal {
			c.refusal = &refusedLeg{status: status, contentType: resp.Header.Get("Content-Type"), body: body}
		}
		c.mu.Unlock()
		c.apply(a)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	}()
	go func() {
		defer rt.wg.Done()
		select {
		case <-r.Context().Done():
			select {
			case <-c.answered:
			default:
				c.clientGone() // the client left before its answer
			}
		case <-pctx.Done():
		}
	}()
	resp, err := rt.post(dctx, rt.rc.DecodeHTTP, db)
	status := 0
	if err == nil {
		status = resp.StatusCode
	} else if r.Context().Err() != nil {
		c.clientGone() // why decode's leg failed, whichever goroutine saw it first
	}
	c.mu.Lock()
	usePrefill, a := c.legs.DecodeAnswered(status)
	refused := c.refusal
	c.mu.Unlock()
	c.apply(a)
	if usePrefill {
		// Prefill refused before decode answered: that refusal is the
		// client's answer, and decode's leg, cancelled, gave none.
		if err == nil {
			resp.Body.Close()
		}
		return refused.response(), c, nil
	}
	if err != nil {
		return nil, c, err
	}
	return resp, c, nil
}

// call is one client request's two legs in flight: the live side of a
// core.Legs, which it consults under mu and whose actions it carries out.
type call struct {
	r                           *http.Request
	cancelPrefill, cancelDecode context.CancelFunc
	// answered is closed once the handler is done with the client.
	answered chan struct{}

	mu      sync.Mutex
	legs    *core.Legs
	refusal *refusedLeg
	// wrote: part of the answer has been written to the client.
	wrote bool
}

func (c *call) apply(a core.LegAction) {
	if a.CancelPrefill {
		c.cancelPrefill()
	}
	if a.CancelDecode {
		c.cancelDecode()
	}
}

// act runs fn on the legs' book under the lock and carries out what it
// decides.
func (c *call) act(fn func(l *core.Legs) core.LegAction) {
	c.mu.Lock()
	a := fn(c.legs)
	c.mu.Unlock()
	c.apply(a)
}

func (c *call) clientGone() {
	c.act(func(l *core.Legs) core.LegAction { return l.ClientGone(c.wrote) })
}

// wroteSome marks part of the answer written to the client.
func (c *call) wroteSome() {
	c.mu.Lock()
	c.wrote = true
	c.mu.Unlock()
}

// judge runs fn on the legs' book under the lock (the stream's events).
func (c *call) judge(fn func(l *core.Legs)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.legs)
}

// done is called once the handler is done with the client: the answer
// written in full, or the client gone (its writes failed, or the request's
// context ended).
func (c *call) done() {
	if c.r.Context().Err() != nil {
		c.clientGone()
	} else {
		c.act((*core.Legs).Answered)
	}
	c.cancelDecode()
	close(c.answered)
}

// maxRefusalBody bounds how much of a refusing engine's error body the
// router keeps to pass on: an error message, never a stream.
const maxRefusalBody = 64 << 10

// refusedLeg is an engine's 4xx answer, kept to be the client's.
type refusedLeg struct {
	status      int
	contentType string
	body        []byte
}

func (l *refusedLeg) response() *http.Response {
	h := http.Header{}
	if l.contentType != "" {
		h.Set("Content-Type", l.contentType)
	}
	return &http.Response{StatusCode: l.status, Header: h, Body: io.NopCloser(bytes.NewReader(l.body)), ContentLength: int64(len(l.body))}
}

func (rt *Router) post(ctx context.Context, hostport string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+hostport+contract.PathGenerate, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.client.Do(req)
}

// handleReadiness answers like SGLang's model gateway: 200 only when
// prefill and decode both answer their /health, else 503 with a JSON body
// naming what is unhealthy. (/health stays liveness only, as on the
// gateway.)
func (rt *Router) handleReadiness(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	roles := []struct{ name, addr string }{{"prefill", rt.rc.PrefillHTTP}, {"decode", rt.rc.DecodeHTTP}}
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rt.healthOf(ctx, role.addr)
		}()
	}
	wg.Wait()
	body := contract.ReadinessBody{Status: "ready"}
	for i, err := range errs {
		if err != nil {
			body.Unhealthy = append(body.Unhealthy, fmt.Sprintf("%s http://%s: %v", roles[i].name, roles[i].addr, err))
		}
	}
	if len(body.Unhealthy) > 0 {
		body.Status = "not ready"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	writeJSON(w, body)
}

// healthOf GETs an engine's /health and wants 200.
func (rt *Router) healthOf(ctx context.Context, hostport string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostport+contract.PathHealth, nil)
	if err != nil {
		return err
	}
	resp, err := rt.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func (rt *Router) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req contract.GenerateRequest
	if err := readJSON(w, r, &req); err != nil {
		badBody(w, "/generate body", err)
		return
	}
	room := rt.room()
	if req.BootstrapRoom != nil {
		room = *req.BootstrapRoom
	}
	req.BootstrapRoom = &room
	if req.Rid == "" {
		req.Rid = fmt.Sprintf("gen-%016x", room)
	}
	resp, c, err := rt.dispatch(r, req)
	defer c.done()
	if err != nil {
		writeError(w, http.StatusBadGateway, "decode: "+err.Error())
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.Header().Set(contract.RoomHeader, strconv.FormatUint(room, 10))
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			c.wroteSome()
			_, _ = w.Write(buf[:n])
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// readEvents reads decode's SSE stream, calling fn for each data payload
// until fn returns false or [DONE]. A stream that ends cleanly before [DONE]
// is no error here (the caller judges by what it read); a broken one
// returns the read error unchanged, e.g. io.ErrUnexpectedEOF.
func readEvents(body io.Reader, fn func(data []byte) bool) error {
	events := sse.NewReader(body, 0)
	for {
		data, err := events.Next()
		switch {
		case err == io.EOF || errors.Is(err, sse.ErrTruncated):
			return nil
		case err != nil:
			return err
		case !fn(data):
			return nil
		}
	}
}

// chatMessage accepts string content or an array of text parts, as the
// official clients send either.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	// Rid is SGLang's extra request id: the engines keep the request by
	// it, so a client that reuses one while the first is held is refused.
	Rid string `json:"rid"`
	// BootstrapRoom is SGLang's PD bootstrap_room, which its OpenAI
	// request takes as /generate does: a client may choose its own room,
	// and one that reuses a room the engines still hold is refused.
	BootstrapRoom *uint64        `json:"bootstrap_room"`
	StreamOptions *streamOptions `json:"stream_options"`
	// N is how many choices the client asks for; only one is served.
	N int `json:"n"`
}

// streamOptions is OpenAI's stream_options: include_usage adds a last
// chunk with the token counts and no choices.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// completionRequest is OpenAI's text completion body (/v1/completions)
// with SGLang's extras, as chatRequest is for chat.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	N             int             `json:"n"`
	Rid           string          `json:"rid"`
	BootstrapRoom *uint64         `json:"bootstrap_room"`
}

// prompt is the request's one prompt: a string, or a list holding one
// string, as the official clients send either. A batch of prompts, or
// token ids (this engine's model has its own tokenizer), is refused.
func (c completionRequest) prompt() (string, error) {
	if len(c.Prompt) == 0 || string(c.Prompt) == "null" {
		return "", errors.New("required")
	}
	var s string
	if err := json.Unmarshal(c.Prompt, &s); err == nil {
		return s, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(c.Prompt, &list); err != nil {
		return "", errors.New("must be a string or a list of one string")
	}
	for _, p := range list {
		if json.Unmarshal(p, &s) != nil {
			return "", errors.New("token ids are not accepted; send the prompt as text")
		}
	}
	if len(list) != 1 {
		return "", fmt.Errorf("a list of %d prompts; this engine answers one prompt per request", len(list))
	}
	return s, nil
}

func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("message content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
