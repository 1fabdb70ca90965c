package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/hostilepeer"
	"github.com/pdchaos/pdchaos/suites/labels"
	"github.com/pdchaos/pdchaos/zmtp"
)

// hostileFor is how long the hostile peers run beside the load in each
// dialect: long enough for every peer to send each of its kinds many
// times on a loaded CI box.
const hostileFor = 3 * time.Second

func hostileKey(what string) string { return "hostile " + what }

// The hostile specs that are not one per dialect, by coverage key.
const (
	hostileDecodeStream = "decode stream"
	hostileMalformed    = "malformed kills loop"
	hostileBroken       = "broken connections"
)

// hostileKeys are the hostile specs' coverage keys, for the probe check.
func hostileKeys() []string {
	var keys []string
	for _, w := range contract.Wires() {
		keys = append(keys, hostileKey(string(w)))
	}
	return append(keys, hostileKey(hostileDecodeStream), hostileKey(hostileMalformed), hostileKey(hostileBroken))
}

// hostilePeers are the specs whose traffic no fault of a preset makes: a
// peer that is not the real decode or prefill speaking to the engine's
// sockets (fuzzed and out-of-order control messages, junk notices and KV
// writes, routes for ranks prefill lacks), and a decode whose stream is
// not JSON. The fixed engine refuses each, answers the real load exactly
// and ends drained; the probes their refusals hit count for the gate's
// probe check, as a preset's do.
func hostilePeers(v labels.Vocabulary, cov *probeCoverage) {
	for _, w := range contract.Wires() {
		It(fmt.Sprintf("the fixed engine refuses hostile peers (%s)", w), v.Label(labels.Slow, labels.Component("prefill"), labels.Component("decode")), func(ctx SpecContext) {
			// Metadata the hostile decode sends for rooms with no request
			// is swept after the bootstrap timeout: short, so the drain
			// below does not wait long for it.
			// Decode paced, so rooms sit committed and decoding while the
			// peers look for them.
			c, err := engine.StartCluster(ctx, contract.EngineConfig{Wire: w, BootstrapTimeout: 5 * time.Second, DecodeTokensPerSec: 200}, nil)
			Expect(err).NotTo(HaveOccurred(), "start the bundled engine")
			DeferCleanup(func(ctx SpecContext) { _ = c.Close(ctx) }, NodeTimeout(30*time.Second))
			h, err := hostilepeer.New(hostilepeer.Target{Wire: w, Prefill: c.Prefill.Addrs(), Decode: c.Decode.Addrs(), KVTargets: c.Decode.KVTargets()})
			Expect(err).NotTo(HaveOccurred())

			runCtx, stop := context.WithTimeout(ctx, hostileFor)
			defer stop()
			var served atomic.Int64
			g, gctx := errgroup.WithContext(runCtx)
			for i := range 4 {
				g.Go(func() error {
					for n := 0; gctx.Err() == nil; n++ {
						if err := exactChat(ctx, c.Endpoint(), 1000*i+n); err != nil {
							return err
						}
						served.Add(1)
					}
					return nil
				})
			}
			g.Go(func() error { return h.Run(gctx, specSeed(0)) })
			Expect(g.Wait()).To(Succeed(), "the real load beside the hostile peers")
			// After the storm the loops still serve, and everything drains.
			for i := range 4 {
				Expect(exactChat(ctx, c.Endpoint(), 9000+i)).To(Succeed(), "a request after the hostile peers stopped")
			}
			Eventually(func() error { return testkit.Drained(ctx, c) }).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).
				Should(Succeed(), "the engine drains after the hostile peers")
			prefillM := c.MetricsURLs()[0]
			Expect(testkit.GaugeIs(ctx, prefillM, contract.MetricBootstrapLoopAlive, 1)).To(Succeed(), "prefill's bootstrap loop survives")
			st := h.Stats()
			Expect(st.Control).To(BeNumerically(">", 0), "no hostile control message was sent")
			Expect(st.KV).To(BeNumerically(">", 0), "no hostile KV message was sent")
			Expect(st.Routes).To(BeNumerically(">", 0), "no route for a rank prefill lacks was asked")
			hits := map[string]int{}
			for _, base := range c.EngineURLs() {
				addProbeHits(ctx, hits, base)
			}
			// The branches only these peers reach, which the probe check
			// counts on this spec for: each must be hit every time.
			only := []string{"decode/status-not-failed", "decode/kv-wrong-rank", "decode/kv-reply-failed", "prefill/route-unknown-rank"}
			if w == contract.WireMooncake {
				// Chunks addressed to decode's own buffers: a stranger can
				// name those on Mooncake only.
				only = append(only, "decode/chunk-overruns-pages", "decode/chunk-wrong-stage", "decode/chunk-partial-token")
				Expect(st.Held).To(BeNumerically(">", 0), "no chunk was sent for a room decode held past its transfer")
			}
			for _, p := range only {
				Expect(hits).To(HaveKey(p), "the hostile peers did not reach %s", p)
			}
			cov.addLive(hostileKey(string(w)), hits)
			AddReportEntry("hostile_"+string(w), fmt.Sprintf("%d requests answered exactly; %+v", served.Load(), st))
		}, SpecTimeout(2*time.Minute))
	}

	It("one malformed control message kills bootstrap-thread-death's loop, and its gauge says so", v.Label(labels.Regression(contract.BootstrapThreadDeath), labels.Component("bootstrap")), func(ctx SpecContext) {
		// The upstream fragility itself (sglang-wire.md: an unguarded
		// frame the thread cannot unpack kills it), which the presets
		// reach only through an ABORT: the same build, one bad message.
		c, err := engine.StartCluster(ctx, contract.EngineConfig{Regressions: []string{contract.BootstrapThreadDeath}}, nil)
		Expect(err).NotTo(HaveOccurred(), "start the bundled engine with %s", contract.BootstrapThreadDeath)
		DeferCleanup(func(ctx SpecContext) { _ = c.Close(ctx) }, NodeTimeout(30*time.Second))
		Expect(exactChat(ctx, c.Endpoint(), 1)).To(Succeed(), "a request before the malformed message")
		h, err := hostilepeer.New(hostilepeer.Target{Wire: contract.WireNIXL, Prefill: c.Prefill.Addrs(), Decode: c.Decode.Addrs(), KVTargets: c.Decode.KVTargets()})
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Malformed(ctx)).To(Succeed())
		prefillM := c.MetricsURLs()[0]
		Eventually(func() error { return testkit.GaugeIs(ctx, prefillM, contract.MetricBootstrapLoopAlive, 0) }).WithContext(ctx).
			WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(), "prefill's bootstrap loop dies on the malformed message")
		hits := map[string]int{}
		addProbeHits(ctx, hits, c.EngineURLs()[0])
		Expect(hits).To(HaveKey("prefill/malformed-kills-loop"), "the loop died by the malformed-message branch")
		cov.addLive(hostileKey(hostileMalformed), hits)
	}, SpecTimeout(time.Minute))

	It("a peer's connection reset between two messages fails the next send on each side, and the one after goes out", v.Label(labels.Component("prefill"), labels.Component("decode")), func(ctx SpecContext) {
		// Short deadlines: decode's requests towards the sink end by its
		// waiting deadline and their ABORTs' ACK timeouts, for the drain.
		c, err := engine.StartCluster(ctx, contract.EngineConfig{WaitingTimeout: 2 * time.Second, AckTimeout: 500 * time.Millisecond}, nil)
		Expect(err).NotTo(HaveOccurred(), "start the bundled engine")
		DeferCleanup(func(ctx SpecContext) { _ = c.Close(ctx) }, NodeTimeout(30*time.Second))
		sink, err := hostilepeer.NewSink(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sink.Close)
		host, port, _ := net.SplitHostPort(sink.Addr())
		// resetBetween sends one message with send until the sink has read
		// it, resets the connection, and sends the next, until the engine
		// counts a send on a connection reset under it (that message is
		// lost; the next goes out on a new connection).
		resetBetween := func(what, base, probe string, send func(i int)) {
			lost := func() int {
				hits := map[string]int{}
				addProbeHits(ctx, hits, base)
				return hits[probe]
			}
			for i := 1; lost() == 0; i++ {
				Expect(i).To(BeNumerically("<=", 200), "%s never counted a send on a connection reset under it (%s)", what, probe)
				before := sink.Messages()
				send(i)
				Eventually(func() bool { return sink.Messages() > before || lost() > 0 }).WithContext(ctx).WithTimeout(10*time.Second).
					WithPolling(5*time.Millisecond).Should(BeTrue(), "%s's message %d neither reached the sink nor was counted lost", what, i)
				sink.Reset()
			}
			// The sender does not give up on the peer: the next message
			// goes out on a new connection.
			before := sink.Messages()
			send(1000)
			Eventually(sink.Messages).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).
				Should(BeNumerically(">", before), "%s's message after the lost one never reached the sink on a new connection", what)
		}
		// Prefill answers each ABORT with an ABORT_ACK to the address the
		// ABORT names: the sink's.
		push, err := zmtp.Dial(ctx, c.Prefill.Addrs().Control[0])
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(push.Close)
		resetBetween("prefill", c.EngineURLs()[0], "prefill/notice-send-failed", func(i int) {
			Expect(push.Send(ctx, [][]byte{[]byte(core.TagAbort), []byte(fmt.Sprint(9_000_000 + i)), []byte(host), []byte(port)})).To(Succeed())
		})
		// Decode sends its registration and TransferInfo to the control
		// address prefill's bootstrap server gives: a bootstrap server of
		// our own gives the sink's.
		lc := net.ListenConfig{}
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		sinkPort, _ := strconv.Atoi(port)
		boot := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == contract.PathRoute {
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"rank_ip":%q,"rank_port":%d}`, host, sinkPort)
			}
		})}
		go func() { _ = boot.Serve(ln) }()
		DeferCleanup(func() { _ = boot.Close() })
		bootHost, bootPort, _ := net.SplitHostPort(ln.Addr().String())
		bp, _ := strconv.Atoi(bootPort)
		reqCtx, cancelReqs := context.WithCancel(ctx)
		defer cancelReqs()
		resetBetween("decode", c.EngineURLs()[1], "decode/control-send-failed", func(i int) {
			room := uint64(8_000_000 + i)
			body, _ := json.Marshal(contract.GenerateRequest{Text: "reset between two messages", SamplingParams: contract.SamplingParams{MaxNewTokens: 2},
				BootstrapHost: bootHost, BootstrapPort: bp, BootstrapRoom: &room})
			go func() {
				// Decode fails it by its waiting deadline: no KV comes.
				req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.EngineURLs()[1]+contract.PathGenerate, strings.NewReader(string(body)))
				if err != nil {
					return
				}
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}()
		})
		Eventually(func() error { return testkit.Drained(ctx, c) }).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).
			Should(Succeed(), "the engine drains after the resets")
		hits := map[string]int{}
		for _, base := range c.EngineURLs() {
			addProbeHits(ctx, hits, base)
		}
		cov.addLive(hostileKey(hostileBroken), hits)
	}, SpecTimeout(2*time.Minute))

	It("the router skips a decode stream event that is not JSON", v.Label(labels.Component("router")), func(ctx SpecContext) {
		// A decode (and prefill) that is not the bundled engine: prefill's
		// leg answers at once, decode's stream carries an event that is
		// not JSON between two that are.
		lc := net.ListenConfig{}
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req contract.GenerateRequest
			if err := readBody(r, &req); err != nil || !req.Stream {
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprint(w, `{"text":"","meta_info":{"id":"x","finish_reason":{"type":"length"}}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprint(w, "data: {\"text\":\"a\",\"meta_info\":{\"id\":\"x\"}}\n\n")
			_, _ = fmt.Fprint(w, "data: this is not json\n\n")
			_, _ = fmt.Fprint(w, "data: {\"text\":\"ab\",\"meta_info\":{\"id\":\"x\",\"finish_reason\":{\"type\":\"length\"}}}\n\ndata: [DONE]\n\n")
		})}
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(func() { _ = srv.Close() })
		addr := ln.Addr().String()
		rt, err := engine.StartRouter(ctx, contract.EngineConfig{}, engine.RouterConfig{PrefillHTTP: addr, DecodeHTTP: addr, PrefillBootstrap: addr}, nil)
		Expect(err).NotTo(HaveOccurred(), "start a router in front of the fake decode")
		DeferCleanup(func(ctx SpecContext) { _ = rt.Close(ctx) }, NodeTimeout(10*time.Second))
		r := testkit.Chat(ctx, "http://"+rt.Addr(), []model.Message{{Role: "user", Content: "hello"}}, 4)
		Expect(r.Err).NotTo(HaveOccurred(), "the client's answer through the router")
		Expect(r.Text).To(Equal("ab"), "the router passes the JSON events on and skips the other")
		hits := map[string]int{}
		addProbeHits(ctx, hits, "http://"+rt.Addr())
		Expect(hits).To(HaveKey("router/bad-event"), "the router counts the event it skipped")
		cov.addLive(hostileKey(hostileDecodeStream), hits)
	}, SpecTimeout(time.Minute))
}

// addProbeHits adds base's code probe hits to hits.
func addProbeHits(ctx context.Context, hits map[string]int, base string) {
	pr, err := testkit.Probes(ctx, base)
	Expect(err).NotTo(HaveOccurred(), "read %s's probes", base)
	for _, p := range pr.Probes {
		if p.Hits > 0 {
			hits[p.Name] += int(p.Hits)
		}
	}
}

// exactChat asks the engine for chat i's answer and checks it is exact.
func exactChat(ctx context.Context, endpoint string, i int) error {
	msgs := []model.Message{{Role: "user", Content: fmt.Sprintf("hostile gate request %d: %s", i, strings.Repeat("refactor ", 1+i%7))}}
	if err := testkit.ChatExact(ctx, endpoint, msgs, 6); err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	return nil
}

// readBody decodes a request's JSON body, at most 1 MiB.
func readBody(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("decode request body: %w", err)
	}
	return nil
}
