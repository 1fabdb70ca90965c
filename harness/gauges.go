package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/record"
)

// GaugeTiming is how a run reads the engines' gauges and the windows it
// judges them by, each with its reason. Real SGLang sets its queue gauges
// only when it logs stats, so a healthy engine can show a non-zero gauge
// for up to its idle refresh after traffic stops; judged by windows tuned
// to live gauges it would be called wedged. A run therefore reads live
// queue lengths (GET /v1/loads) where every engine serves them, and
// otherwise widens its windows past the idle refresh. Printed when a run
// starts and kept in result.json.
type GaugeTiming struct {
	// Mode is when the engines set their gauges.
	Mode contract.GaugeMode `json:"mode"`
	// ModeFrom says how Mode was worked out.
	ModeFrom string `json:"mode_from"`
	// IdleRefresh is how long an idle logged engine goes between gauge
	// refreshes (0 for live gauges).
	IdleRefresh time.Duration `json:"idle_refresh,omitempty"`
	// LiveLoads says the recorder reads every engine's /v1/loads in place
	// of its queue gauges; LoadsWhy says why it does or does not.
	LiveLoads bool   `json:"live_loads"`
	LoadsWhy  string `json:"loads_why"`
	// Widened says the windows below were widened for stale gauges, to
	// IdleRefresh + 2 scrapes + 2 s where the scenario's were shorter.
	Widened bool `json:"widened"`
	// WedgeWindow, DrainDeadline and ProbeSettle (the wait for the
	// liveness probes' own rooms to clear before the final scrape) are
	// the windows the run uses.
	WedgeWindow   time.Duration `json:"wedge_window"`
	DrainDeadline time.Duration `json:"drain_deadline"`
	ProbeSettle   time.Duration `json:"probe_settle"`
}

// probeSettle is how long a run waits, with live gauges, for the liveness
// probes' rooms to clear before the final scrape.
const probeSettle = 2 * time.Second

// String is the line a run prints: the mode, where live loads come from,
// and the windows with why.
func (g GaugeTiming) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gauges %s (%s)", g.Mode, g.ModeFrom)
	if g.Mode == contract.GaugesLogged {
		fmt.Fprintf(&b, ", idle refresh %v; live loads: %s", g.IdleRefresh, g.LoadsWhy)
	}
	fmt.Fprintf(&b, "; windows: wedge %v, drain %v, probe settle %v", g.WedgeWindow, g.DrainDeadline, g.ProbeSettle)
	switch {
	case g.Widened:
		fmt.Fprintf(&b, " (widened to idle refresh + 2 scrapes + 2s: gauges may be stale that long)")
	case g.Mode == contract.GaugesLogged:
		b.WriteString(" (as the scenario's: judged by live loads, never stale)")
	default:
		b.WriteString(" (as the scenario's: live gauges)")
	}
	return b.String()
}

// decideGaugeTiming works out the engines' gauge mode (the scenario's
// engine setting on a target that runs it, else each engine's server
// info), whether every engine serves live loads, and the windows that
// follow. checks has its defaults filled.
func decideGaugeTiming(ctx context.Context, setsEngine bool, cfg contract.EngineConfig, metricsURLs []string, checks CheckSpec) GaugeTiming {
	g := GaugeTiming{WedgeWindow: checks.WedgeWindow, DrainDeadline: checks.DrainDeadline, ProbeSettle: probeSettle}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	if setsEngine {
		c, _, err := cfg.Resolve() // validated with the scenario
		if err != nil {
			c.Gauges = contract.GaugesLogged
		}
		g.Mode, g.IdleRefresh = c.Gauges, c.IdleMetricsInterval
		g.ModeFrom = "the scenario's engine.gauges"
		if cfg.Gauges == "" {
			g.ModeFrom = "the engine's default; the scenario sets no engine.gauges"
		}
	} else {
		g.Mode, g.IdleRefresh, g.ModeFrom = serverInfoMode(ctx, client, metricsURLs)
	}
	if g.Mode != contract.GaugesLogged {
		g.IdleRefresh = 0
		return g
	}
	g.LiveLoads, g.LoadsWhy = true, "every engine serves "+contract.PathLoads+"?"+contract.LoadsQueryDisagg+"; queues are judged by them"
	for _, u := range metricsURLs {
		if _, err := record.FetchLoads(ctx, client, u); err != nil {
			g.LiveLoads, g.LoadsWhy = false, "none: "+err.Error()
			break
		}
	}
	if len(metricsURLs) == 0 {
		g.LiveLoads, g.LoadsWhy = false, "none: no engine metrics URL"
	}
	if g.LiveLoads {
		return g
	}
	stale := g.IdleRefresh + 2*checks.ScrapeInterval + 2*time.Second
	g.Widened = true
	g.WedgeWindow = max(g.WedgeWindow, stale)
	g.DrainDeadline = max(g.DrainDeadline, stale)
	g.ProbeSettle = max(g.ProbeSettle, stale)
	return g
}

// serverInfoMode reads each engine's /get_server_info: the bundled engine
// names its mode (contract.ServerInfoGauges); SGLang names none and always
// sets gauges at its log points, idle every 30 s. An engine whose info
// cannot be read is taken as SGLang: assuming stale gauges costs time,
// assuming live ones costs false alarms.
func serverInfoMode(ctx context.Context, c *http.Client, metricsURLs []string) (contract.GaugeMode, time.Duration, string) {
	mode, idle := contract.GaugesLive, time.Duration(0)
	var why []string
	for _, u := range metricsURLs {
		base := strings.TrimSuffix(strings.TrimRight(u, "/"), contract.PathMetrics)
		info, err := getServerInfo(ctx, c, base)
		m, _ := info[contract.ServerInfoGauges].(string)
		switch {
		case err != nil:
			mode, idle = contract.GaugesLogged, max(idle, contract.DefaultIdleMetricsInterval)
			why = append(why, fmt.Sprintf("%s: server info unreadable (%v), taken as SGLang", base, err))
		case m == "":
			mode, idle = contract.GaugesLogged, max(idle, contract.DefaultIdleMetricsInterval)
			why = append(why, fmt.Sprintf("%s: server info names no %s: SGLang, which sets gauges when it logs stats", base, contract.ServerInfoGauges))
		case m == string(contract.GaugesLogged):
			mode = contract.GaugesLogged
			sec, _ := info[contract.ServerInfoIdleMetricsInterval].(float64)
			idle = max(idle, time.Duration(sec*float64(time.Second)))
			if sec <= 0 {
				idle = max(idle, contract.DefaultIdleMetricsInterval)
			}
			why = append(why, fmt.Sprintf("%s: server info %s=logged", base, contract.ServerInfoGauges))
		default:
			why = append(why, fmt.Sprintf("%s: server info %s=%s", base, contract.ServerInfoGauges, m))
		}
	}
	if len(why) == 0 {
		return contract.GaugesLogged, contract.DefaultIdleMetricsInterval, "no engine to ask: taken as SGLang"
	}
	return mode, idle, strings.Join(why, "; ")
}

// getServerInfo GETs base's server info as a JSON object.
func getServerInfo(ctx context.Context, c *http.Client, base string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+contract.PathServerInfo, nil)
	if err != nil {
		return nil, fmt.Errorf("server info %s: %w", base, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server info %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("server info %s: status %d", base, resp.StatusCode)
	}
	var info map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 4<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("server info %s: decode: %w", base, err)
	}
	return info, nil
}
