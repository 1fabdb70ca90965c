package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

// MaxRanks bounds the prefill ranks FetchRanks walks (dp·cp·tp·pp): a
// topology answer claiming more is refused rather than trusted.
const MaxRanks = 256

// RankRoute is one prefill rank's control (ZMQ PULL) address as its
// bootstrap server's /route gives it.
type RankRoute struct {
	DP, CP, TP, PP int
	// Addr is rank_ip:rank_port.
	Addr string
}

// routeQuery names a rank in every /route dialect at once
// (contract.RouteQueryAll): the server reads the names its era knows. All
// -1 asks for the topology.
func routeQuery(dp, cp, tp, pp int) string {
	return contract.RouteQueryAll(contract.RouteRank{DP: dp, CP: cp, TP: tp, PP: pp})
}

// FetchRanks reads a prefill bootstrap server's topology from GET /route
// (all ranks -1) and then each rank's {rank_ip, rank_port}. bootstrap is
// its base URL (http://host:8998). Sizes are read under every era's key
// (contract.RouteKeys: attn_tp_size, prefill_attn_tp_size or
// prefill_tp_size, …); a missing size is 1. A 503 means the prefill ranks
// have not all registered yet (the caller may retry).
func FetchRanks(ctx context.Context, client *http.Client, bootstrap string) ([]RankRoute, error) {
	base := strings.TrimRight(bootstrap, "/")
	var topo map[string]json.RawMessage
	if err := getJSON(ctx, client, base+contract.PathRoute+"?"+routeQuery(-1, -1, -1, -1), &topo); err != nil {
		return nil, fmt.Errorf("read prefill topology: %w", err)
	}
	size := func(names ...string) (int, error) {
		for _, n := range names {
			raw, ok := topo[n]
			if !ok {
				continue
			}
			var v int
			if err := json.Unmarshal(raw, &v); err != nil || v < 1 {
				return 0, fmt.Errorf("read prefill topology: %s is %s, want a size >= 1", n, raw)
			}
			return v, nil
		}
		return 1, nil
	}
	tp, err := size(contract.RouteKeys(contract.RouteTP)...)
	if err != nil {
		return nil, err
	}
	dp, err := size(contract.RouteKeys(contract.RouteDP)...)
	if err != nil {
		return nil, err
	}
	cp, err := size(contract.RouteKeys(contract.RouteCP)...)
	if err != nil {
		return nil, err
	}
	pp, err := size(contract.RouteKeys(contract.RoutePP)...)
	if err != nil {
		return nil, err
	}
	if dp*cp*tp*pp > MaxRanks {
		return nil, fmt.Errorf("read prefill topology: dp %d × cp %d × tp %d × pp %d ranks is over %d", dp, cp, tp, pp, MaxRanks)
	}
	var out []RankRoute
	for d := range dp {
		for c := range cp {
			for p := range pp {
				for t := range tp {
					var ans struct {
						RankIP   string `json:"rank_ip"`
						RankPort int    `json:"rank_port"`
					}
					if err := getJSON(ctx, client, base+contract.PathRoute+"?"+routeQuery(d, c, t, p), &ans); err != nil {
						return nil, fmt.Errorf("read route of prefill rank dp %d cp %d tp %d pp %d: %w", d, c, t, p, err)
					}
					if ans.RankIP == "" || ans.RankPort <= 0 || ans.RankPort > 65535 {
						return nil, fmt.Errorf("read route of prefill rank dp %d cp %d tp %d pp %d: no rank_ip/rank_port in the answer", d, c, t, p)
					}
					out = append(out, RankRoute{DP: d, CP: c, TP: t, PP: p, Addr: net.JoinHostPort(ans.RankIP, strconv.Itoa(ans.RankPort))})
				}
			}
		}
	}
	return out, nil
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRouteAnswer))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %.200s", u, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: answer is not JSON: %w", u, err)
	}
	return nil
}
