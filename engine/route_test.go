package engine_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// Prefill's bootstrap server answers a decode of every SGLang era: each
// era's topology query with that era's keys (and nothing a decode of that
// era would not read), each era's rank query with the rank's control
// socket, a rank it lacks with a 404 counted by its probe, and a query
// that fits no era with a 400 naming what each era sends.
func TestBootstrapRouteAnswersEveryEra(t *testing.T) {
	testkit.NoLeaks(t)
	p, err := engine.StartPrefill(t.Context(), contract.EngineConfig{TP: 2, PageSize: 32}, engine.PrefillAddrs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(t.Context()) })
	addrs := p.Addrs()
	get := func(query string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addrs.Bootstrap + contract.PathRoute + "?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	wantSize := map[contract.RouteField]any{contract.RouteTP: 2.0, contract.RouteDP: 1.0, contract.RouteCP: 1.0, contract.RoutePP: 1.0,
		contract.RoutePageSize: 32.0, contract.RouteKVCacheDtype: "auto", contract.RouteFollowBootstrapRoom: true}
	for _, d := range contract.RouteDialects() {
		t.Run(d.Name, func(t *testing.T) {
			status, body := get(d.Query(contract.TopologyQuery))
			var topo map[string]any
			if status != http.StatusOK || json.Unmarshal([]byte(body), &topo) != nil {
				t.Fatalf("topology query: %d %s", status, body)
			}
			if len(topo) != len(d.Topology) {
				t.Errorf("topology answer %s has keys no %s decode reads", body, d.Name)
			}
			for _, k := range d.Topology {
				if topo[k.Name] != wantSize[k.Field] {
					t.Errorf("topology %s = %v, want %v (answer %s)", k.Name, topo[k.Name], wantSize[k.Field], body)
				}
			}
			for rank, ctl := range addrs.Control {
				status, body := get(d.Query(contract.RouteRank{TP: rank}))
				var ans struct {
					RankIP   string `json:"rank_ip"`
					RankPort int    `json:"rank_port"`
				}
				if status != http.StatusOK || json.Unmarshal([]byte(body), &ans) != nil {
					t.Fatalf("rank %d: %d %s", rank, status, body)
				}
				if got := net.JoinHostPort(ans.RankIP, strconv.Itoa(ans.RankPort)); got != ctl {
					t.Errorf("rank %d: route %s, want its control socket %s", rank, got, ctl)
				}
			}
			if status, body := get(d.Query(contract.RouteRank{TP: 2})); status != http.StatusNotFound {
				t.Errorf("rank 2 of a TP-2 prefill: %d %s, want 404", status, body)
			}
		})
	}
	// Every era's names at once are read as the newest era's.
	status, body := get(contract.RouteQueryAll(contract.TopologyQuery))
	if status != http.StatusOK || !strings.Contains(body, `"attn_tp_size":2`) {
		t.Errorf("every era's names at once: %d %s, want the newest era's answer", status, body)
	}
	for _, q := range []string{"target_tp_rank=0", "engine_rank=0", "", "engine_rank=x&target_dp_group=0"} {
		status, body := get(q)
		if status != http.StatusBadRequest || !strings.Contains(body, "route query") {
			t.Errorf("query %q: %d %s, want a 400 naming what is missing", q, status, body)
		}
	}
	resp, err := http.Get("http://" + addrs.HTTP + contract.PathDebugProbes)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var probes contract.ProbesResponse
	if err := json.NewDecoder(resp.Body).Decode(&probes); err != nil {
		t.Fatal(err)
	}
	n := int64(-1)
	for _, h := range probes.Probes {
		if h.Name == contract.ProbePrefillRouteUnknownRank.String() {
			n = h.Hits
		}
	}
	if n != int64(len(contract.RouteDialects())) {
		t.Errorf("prefill/route-unknown-rank hit %d times, want once per era's lookup of a rank prefill lacks (%d)", n, len(contract.RouteDialects()))
	}
}
