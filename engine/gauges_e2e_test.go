package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// liveInflight reads prefill's inflight queue from GET /v1/loads.
func liveInflight(ctx context.Context, base string) (int, error) {
	var l contract.LoadsResponse
	if err := testkit.GetJSON(ctx, base+contract.PathLoads+"?"+contract.LoadsQueryDisagg, &l); err != nil {
		return 0, err
	}
	if len(l.Loads) != 1 || l.Loads[0].Disaggregation == nil {
		return 0, fmt.Errorf("loads %+v: want one rank with a disaggregation section", l)
	}
	return l.Loads[0].Disaggregation.PrefillInflightQueueReqs, nil
}

// holdOneInflight pauses the transfer workers, sends one request and waits
// until prefill holds it in its inflight queue (live), then resumes the
// workers and waits for the answer and for /v1/loads to show the queue
// empty. It returns when the answer came.
func holdOneInflight(t *testing.T, c *engine.Cluster) {
	t.Helper()
	h := hooksOf(t, c)
	must(t, h.Pause(t.Context(), allWorkers))
	prefill := c.EngineURLs()[0]
	done, _ := testkit.Async(t, func(ctx context.Context) error {
		return testkit.ChatExact(ctx, c.Endpoint(), prompt(1), 4)
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		n, err := liveInflight(t.Context(), prefill)
		if err == nil && n != 1 {
			err = fmt.Errorf("live inflight %d, want 1", n)
		}
		return err
	})
	must(t, h.Resume(t.Context(), allWorkers))
	must(t, testkit.Recv(t, done, 10*time.Second))
	testkit.Eventually(t, 5*time.Second, func() error {
		n, err := liveInflight(t.Context(), prefill)
		if err == nil && n != 0 {
			err = fmt.Errorf("live inflight %d, want 0", n)
		}
		return err
	})
}

// A logged engine shows SGLang's staleness: the inflight gauge logged at
// the prefill batch stays 1 after the transfer ended and /v1/loads reads
// 0, until the idle refresh sets it; a live engine's gauge is 0 as soon as
// the queue is.
func TestLoggedGaugesStayStaleUntilIdleRefresh(t *testing.T) {
	const idle = 4 * time.Second
	t.Run("logged", func(t *testing.T) {
		c := testcluster.Start(t, contract.EngineConfig{Gauges: contract.GaugesLogged, IdleMetricsInterval: idle})
		metrics := c.MetricsURLs()[0]
		start := time.Now()
		holdOneInflight(t, c)
		v, err := testkit.Gauge(t.Context(), metrics, contract.MetricPrefillInflightQueue)
		must(t, err)
		if took := time.Since(start); took >= idle {
			t.Fatalf("the setup took %v, longer than the idle refresh %v: staleness cannot be judged", took, idle)
		}
		if v != 1 {
			t.Fatalf("logged inflight gauge %g right after the queue emptied, want the stale 1 logged at the batch", v)
		}
		w := testkit.Eventually(t, idle+5*time.Second, func() error {
			return testkit.GaugeIs(t.Context(), metrics, contract.MetricPrefillInflightQueue, 0)
		})
		// The batch that logged 1 ran after start, so the refresh cannot
		// come before start+idle.
		if took := time.Since(start); took < idle {
			t.Errorf("gauge refreshed %v after the request began, before the idle period %v", took, idle)
		}
		t.Logf("logged gauge refreshed to 0 %v after the queue emptied (idle refresh every %v)", w.Took, idle)
	})
	t.Run("live", func(t *testing.T) {
		c := testcluster.Start(t, contract.EngineConfig{})
		holdOneInflight(t, c)
		must(t, testkit.GaugeIs(t.Context(), c.MetricsURLs()[0], contract.MetricPrefillInflightQueue, 0))
	})
}

// /v1/loads answers in SGLang's shape: the disagg section only when asked,
// a bad section or format refused naming it; server info names the gauge
// mode and cadence; no_loads serves none.
func TestLoadsEndpointAndServerInfo(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{Gauges: contract.GaugesLogged, DecodeLogInterval: 7})
	for i, base := range c.EngineURLs() {
		var l contract.LoadsResponse
		must(t, testkit.GetJSON(t.Context(), base+contract.PathLoads+"?include=core,disagg", &l))
		if l.DPRankCount != 1 || len(l.Loads) != 1 || l.Loads[0].Disaggregation == nil {
			t.Fatalf("%s loads %+v: want one DP rank with a disaggregation section", base, l)
		}
		if want := []string{"prefill", "decode"}[i]; l.Loads[0].Disaggregation.Mode != want {
			t.Errorf("%s mode %q, want %q", base, l.Loads[0].Disaggregation.Mode, want)
		}
		l = contract.LoadsResponse{}
		must(t, testkit.GetJSON(t.Context(), base+contract.PathLoads, &l))
		if len(l.Loads) != 1 || l.Loads[0].Disaggregation != nil {
			t.Errorf("%s loads without include=disagg: %+v, want no disaggregation section", base, l)
		}
		for _, q := range []string{"include=gpu", "format=prometheus"} {
			resp, err := http.Get(base + contract.PathLoads + "?" + q)
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s ?%s: status %d, want 400", base, q, resp.StatusCode)
			}
		}
		var info map[string]any
		must(t, testkit.GetJSON(t.Context(), base+contract.PathServerInfo, &info))
		if info[contract.ServerInfoGauges] != "logged" || info[contract.ServerInfoDecodeLogInterval] != 7.0 ||
			info[contract.ServerInfoIdleMetricsInterval] != 30.0 {
			t.Errorf("%s server info %v: want gauges logged, decode_log_interval 7, idle_metrics_interval 30", base, info)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	nc := testcluster.Start(t, contract.EngineConfig{NoLoads: true})
	err := testkit.GetJSON(t.Context(), nc.EngineURLs()[0]+contract.PathLoads, &contract.LoadsResponse{})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("no_loads engine: %v, want a 404", err)
	}
}
