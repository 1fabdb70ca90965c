package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// staleInflight leaves a logged engine's prefill inflight gauge at a stale
// 1 while its live queue is empty, as SGLang shows after traffic stops: one
// request is held in the inflight queue (transfer workers paused) across a
// prefill batch's log point, then let through and answered. It returns when
// the gauge reads 1 with nothing in flight.
func staleInflight(t *testing.T, c *engine.Cluster) {
	t.Helper()
	h, err := c.Hooks()
	if err != nil {
		t.Fatal(err)
	}
	workers := contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: -1}
	if err := h.Pause(t.Context(), workers); err != nil {
		t.Fatal(err)
	}
	done, _ := testkit.Async(t, func(ctx context.Context) error {
		return testkit.ChatExact(ctx, c.Endpoint(), []model.Message{{Role: "user", Content: strings.Repeat("stale gauge ", 100)}}, 4)
	})
	prefill := c.EngineURLs()[0]
	inflight := func(want int) func() error {
		return func() error {
			var l contract.LoadsResponse
			if err := testkit.GetJSON(t.Context(), prefill+contract.PathLoads+"?"+contract.LoadsQueryDisagg, &l); err != nil {
				return err
			}
			if len(l.Loads) != 1 || l.Loads[0].Disaggregation == nil || l.Loads[0].Disaggregation.PrefillInflightQueueReqs != want {
				return fmt.Errorf("live loads %+v: want one rank with %d inflight", l.Loads, want)
			}
			return nil
		}
	}
	testkit.Eventually(t, 10*time.Second, inflight(1))
	if err := h.Resume(t.Context(), workers); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, done, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, inflight(0))
	if err := testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillInflightQueue, 1); err != nil {
		t.Fatalf("no stale gauge to judge: %v", err)
	}
}

// hideLoads serves base (an engine's HTTP server) but answers 404 to
// /v1/loads, as SGLang builds before it do.
func hideLoads(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == contract.PathLoads {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// watch judges a logged engine by its live loads where it serves them, so
// a stale gauge is no wedge even with a short window; without loads the
// same short window flags the healthy engine (and watch warns that it
// will), while the default window is widened past the idle refresh.
func TestWatchLoggedGauges(t *testing.T) {
	const idle = 20 * time.Second
	for _, tc := range []struct {
		name    string
		noLoads bool
		window  string // "" for the default
		code    int
		want    []string
	}{
		{"live loads, short window", false, "1s", exitPass, []string{"live loads: every engine serves", "no wedge"}},
		{"no loads, short window", true, "1s", exitViolation, []string{"WARNING: shorter than", contract.MetricPrefillInflightQueue}},
		{"no loads, default window", true, "", exitPass, []string{"widened from 10s", "window 22.5s", "no wedge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.Start(t, contract.EngineConfig{Gauges: contract.GaugesLogged, IdleMetricsInterval: idle})
			start := time.Now()
			staleInflight(t, c)
			args := []string{"watch", "--for", "4s"}
			if tc.window != "" {
				args = append(args, "--window", tc.window)
			}
			for _, base := range c.EngineURLs() {
				if tc.noLoads {
					base = hideLoads(t, base)
				}
				args = append(args, "--metrics", base+contract.PathMetrics)
			}
			code, out := execute(t, args...)
			// The stale gauge lasts until the idle refresh after the batch
			// that logged it, which ran after start.
			if took := time.Since(start); took >= idle {
				t.Fatalf("setup and watch took %v, past the idle refresh %v: the gauge was not stale throughout", took, idle)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}
