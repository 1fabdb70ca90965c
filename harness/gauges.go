package harness

import (
	"context"
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
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var src record.GaugeSource
	if setsEngine {
		c, _, err := cfg.Resolve() // validated with the scenario
		if err != nil {
			c.Gauges = contract.GaugesLogged
		}
		src = record.GaugeSource{Mode: c.Gauges, IdleRefresh: c.IdleMetricsInterval, ModeFrom: "the scenario's engine.gauges"}
		if cfg.Gauges == "" {
			src.ModeFrom = "the engine's default; the scenario sets no engine.gauges"
		}
		src = src.WithLoads(ctx, client, metricsURLs)
	} else {
		src = record.DetectGauges(ctx, client, metricsURLs)
	}
	g := GaugeTiming{Mode: src.Mode, ModeFrom: src.ModeFrom, IdleRefresh: src.IdleRefresh, LiveLoads: src.LiveLoads, LoadsWhy: src.LoadsWhy,
		WedgeWindow: checks.WedgeWindow, DrainDeadline: checks.DrainDeadline, ProbeSettle: probeSettle}
	if g.Mode != contract.GaugesLogged {
		g.LoadsWhy = ""
		return g
	}
	if stale := src.StaleFor(checks.ScrapeInterval); stale > 0 {
		g.Widened = true
		g.WedgeWindow = max(g.WedgeWindow, stale)
		g.DrainDeadline = max(g.DrainDeadline, stale)
		g.ProbeSettle = max(g.ProbeSettle, stale)
	}
	return g
}
