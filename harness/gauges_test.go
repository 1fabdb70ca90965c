package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
)

// bundledMetrics starts a bundled engine with cfg and returns its metrics URLs.
func bundledMetrics(t *testing.T, cfg contract.EngineConfig) []string {
	t.Helper()
	tg, err := target.Bundled{}.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	return tg.MetricsURLs()
}

// sglangLike serves what a real SGLang engine answers: server info without
// a gauge mode, and no /v1/loads (an older build).
func sglangLike(t *testing.T) []string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+contract.PathServerInfo, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"model_path":"m","disaggregation_mode":"decode","decode_log_interval":40,"enable_metrics":true}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return []string{srv.URL + contract.PathMetrics}
}

// The mode comes from the scenario on a target that runs it, else from
// server info; live loads keep the scenario's windows; without them a
// logged engine's windows widen to idle refresh + 2 scrapes + 2 s.
func TestDecideGaugeTiming(t *testing.T) {
	checks := CheckSpec{WedgeWindow: 4 * time.Second, DrainDeadline: 8 * time.Second}.withDefaults()
	const idle = 3 * time.Second
	widened := idle + 2*checks.ScrapeInterval + 2*time.Second
	for _, tc := range []struct {
		name       string
		setsEngine bool
		cfg        contract.EngineConfig
		urls       func(*testing.T) []string
		mode       contract.GaugeMode
		liveLoads  bool
		wedge      time.Duration
		from       string
	}{
		{"bundled live", true, contract.EngineConfig{}, nil, contract.GaugesLive, false, 4 * time.Second, "default"},
		{"bundled logged with loads", true, contract.EngineConfig{Gauges: contract.GaugesLogged, IdleMetricsInterval: idle}, nil,
			contract.GaugesLogged, true, 4 * time.Second, "engine.gauges"},
		{"bundled logged without loads", true, contract.EngineConfig{Gauges: contract.GaugesLogged, IdleMetricsInterval: idle, NoLoads: true}, nil,
			contract.GaugesLogged, false, widened, "engine.gauges"},
		{"external pdchaos engine logged, no loads", false, contract.EngineConfig{Gauges: contract.GaugesLogged, IdleMetricsInterval: idle, NoLoads: true}, nil,
			contract.GaugesLogged, false, widened, "pdchaos_gauges=logged"},
		{"external pdchaos engine live", false, contract.EngineConfig{}, nil, contract.GaugesLive, false, 4 * time.Second, "pdchaos_gauges=live"},
		{"external SGLang", false, contract.EngineConfig{}, sglangLike, contract.GaugesLogged, false,
			contract.DefaultIdleMetricsInterval + 2*checks.ScrapeInterval + 2*time.Second, "SGLang"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			if tc.urls != nil {
				urls = tc.urls(t)
			} else {
				urls = bundledMetrics(t, tc.cfg)
			}
			g := decideGaugeTiming(t.Context(), tc.setsEngine, tc.cfg, urls, checks)
			t.Log(g)
			if g.Mode != tc.mode || g.LiveLoads != tc.liveLoads || g.WedgeWindow != tc.wedge || !strings.Contains(g.ModeFrom, tc.from) {
				t.Fatalf("%s: want mode %s live loads %v wedge %v from %q", g, tc.mode, tc.liveLoads, tc.wedge, tc.from)
			}
			if g.Widened != (tc.wedge != checks.WedgeWindow) {
				t.Errorf("widened %v with wedge window %v", g.Widened, g.WedgeWindow)
			}
			if g.Widened && (g.DrainDeadline != max(checks.DrainDeadline, g.WedgeWindow) || g.ProbeSettle != g.WedgeWindow) {
				t.Errorf("widened windows: drain %v, probe settle %v", g.DrainDeadline, g.ProbeSettle)
			}
		})
	}
}

// A logged engine on SGLang's cadence is judged without false alarms,
// whether by its live loads or, without them, by widened windows; and a
// regression that pins a decode queue is still caught.
func TestRunLoggedGauges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario per case")
	}
	for _, tc := range []struct {
		name        string
		noLoads     bool
		regressions []string
		want        check.Status
	}{
		{"live loads, fixed engine", false, nil, check.Pass},
		{"gauges only, fixed engine", true, nil, check.Pass},
		{"gauges only, decode-abort-leak", true, []string{"decode-abort-leak"}, check.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := preset(t, "abort-storm", tc.regressions...)
			// An idle refresh of 6s outlasts the preset's 4s wedge window and
			// the 2s probe settle: judged by those and the gauges alone, the
			// fixed engine fails slots-released on a stale inflight gauge.
			sc.Engine.Gauges, sc.Engine.IdleMetricsInterval, sc.Engine.NoLoads = contract.GaugesLogged, 6*time.Second, tc.noLoads
			var notes []string
			res, err := Run(t.Context(), RunOptions{Scenario: sc, Seed: 3, ResultsDir: t.TempDir(), NoReport: true,
				OnNote: func(s string) { notes = append(notes, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) == 0 || !strings.Contains(notes[0], "gauges logged") || res.Gauges == nil || res.Gauges.LiveLoads == tc.noLoads {
				t.Fatalf("notes %q, result gauges %+v: want the logged timing printed and kept", notes, res.Gauges)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %v", res.Verdict, tc.want, res.Err())
			}
			if tc.want == check.Pass && len(res.Wedges) > 0 {
				t.Fatalf("healthy logged engine: false wedge %v", res.Wedges[0])
			}
			if tc.want == check.Fail {
				if sr, _ := res.Checks.Get(contract.CheckSlotsReleased); sr.Status != check.Fail {
					t.Fatalf("slots-released %s: %s", sr.Status, sr.Summary)
				}
				if len(res.Wedges) == 0 {
					t.Fatal("watchdog flagged no wedge")
				}
			}
		})
	}
}
