package record

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// DefaultInterval is the scrape period of the recorder and of Watch when
// none is given.
const DefaultInterval = 250 * time.Millisecond

// GaugeSource is how a target's engines set their queue gauges and whether
// live queue lengths can be read in their place. run, watch and doctor
// all work it out the same way, so they judge one deployment alike.
type GaugeSource struct {
	// Mode is when the engines set their gauges.
	Mode contract.GaugeMode
	// ModeFrom says how Mode was worked out.
	ModeFrom string
	// IdleRefresh is how long an idle logged engine goes between gauge
	// refreshes (0 for live gauges).
	IdleRefresh time.Duration
	// LiveLoads says every engine serves GET /v1/loads with its PD
	// section; LoadsWhy says why or why not. Only asked of logged engines:
	// live gauges are never stale.
	LiveLoads bool
	LoadsWhy  string
}

// StaleFor is how long a gauge may lag the engine when judged through
// scrapes every interval: 0 where gauges are live or live loads are read,
// else the idle refresh plus two scrapes plus 2 s of slack.
func (g GaugeSource) StaleFor(interval time.Duration) time.Duration {
	if g.Mode != contract.GaugesLogged || g.LiveLoads {
		return 0
	}
	return g.IdleRefresh + 2*interval + 2*time.Second
}

// DetectGauges asks each engine behind metricsURLs for its server info
// (the bundled engine names its mode; SGLang names none and is taken as
// logged, idle refresh 30 s) and, for a logged engine, whether every engine
// serves live loads.
func DetectGauges(ctx context.Context, c *http.Client, metricsURLs []string) GaugeSource {
	var g GaugeSource
	g.Mode, g.IdleRefresh, g.ModeFrom = serverInfoMode(ctx, c, metricsURLs)
	return g.WithLoads(ctx, c, metricsURLs)
}

// WithLoads fills LiveLoads and LoadsWhy for a source whose mode is known
// (a target that runs the scenario's own engine config is not asked).
func (g GaugeSource) WithLoads(ctx context.Context, c *http.Client, metricsURLs []string) GaugeSource {
	if g.Mode != contract.GaugesLogged {
		g.IdleRefresh, g.LiveLoads, g.LoadsWhy = 0, false, "not needed: live gauges"
		return g
	}
	if len(metricsURLs) == 0 {
		g.LiveLoads, g.LoadsWhy = false, "none: no engine metrics URL"
		return g
	}
	for _, u := range metricsURLs {
		if _, err := FetchLoads(ctx, c, u); err != nil {
			g.LiveLoads, g.LoadsWhy = false, "none: "+err.Error()
			return g
		}
	}
	g.LiveLoads, g.LoadsWhy = true, "every engine serves "+contract.PathLoads+"?"+contract.LoadsQueryDisagg+"; queues are judged by them"
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
	var info map[string]any
	if err := getJSON(ctx, c, base+contract.PathServerInfo, 4<<20, "server info "+base, "server info", &info); err != nil {
		return nil, err
	}
	return info, nil
}

// getJSON GETs url and decodes its 200 answer, read within limit bytes,
// into v; errors start with what, and an answer past the limit is named
// body.
func getJSON(ctx context.Context, c *http.Client, url string, limit int64, what, body string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", what, resp.StatusCode)
	}
	if err := json.NewDecoder(capped(resp.Body, limit, body)).Decode(v); err != nil {
		return fmt.Errorf("%s: decode: %w", what, err)
	}
	return nil
}
