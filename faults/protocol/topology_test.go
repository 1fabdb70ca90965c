package protocol

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// bootstrapServer answers /route like one SGLang version: topo is the
// answer to the all -1 query; a rank answer is 127.0.0.1:(7000+tp+10·dp),
// read from the query names that version knows (tpName, dpName).
func bootstrapServer(t *testing.T, status int, topo map[string]any, tpName, dpName string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != contract.PathRoute {
			w.WriteHeader(http.StatusOK)
			return
		}
		if status != http.StatusOK {
			http.Error(w, "Not all instances are registered", status)
			return
		}
		q := r.URL.Query()
		tp, err1 := strconv.Atoi(q.Get(tpName))
		dp, err2 := strconv.Atoi(q.Get(dpName))
		if err1 != nil || err2 != nil {
			http.Error(w, "missing parameter", http.StatusBadRequest)
			return
		}
		if tp == -1 {
			_ = json.NewEncoder(w).Encode(topo)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"rank_ip": "127.0.0.1", "rank_port": 7000 + tp + 10*dp})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFetchRanks reads the topology and every rank's address from each
// /route dialect, and refuses answers that cannot be trusted.
func TestFetchRanks(t *testing.T) {
	for _, tc := range []struct {
		name           string
		status         int
		topo           map[string]any
		tpName, dpName string
		want           []string
		err            string
	}{
		{"main@2026", 200, map[string]any{"attn_tp_size": 2, "attn_cp_size": 1, "dp_size": 2, "pp_size": 1, "page_size": 64},
			"target_tp_rank", "prefill_dp_rank", []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7010", "127.0.0.1:7011"}, ""},
		{"v0.5", 200, map[string]any{"prefill_attn_tp_size": 2, "prefill_dp_size": 1, "prefill_pp_size": 1},
			"engine_rank", "target_dp_group", []string{"127.0.0.1:7000", "127.0.0.1:7001"}, ""},
		{"early-2025", 200, map[string]any{"prefill_tp_size": 2, "prefill_dp_size": 1},
			"engine_rank", "target_dp_group", []string{"127.0.0.1:7000", "127.0.0.1:7001"}, ""},
		{"not all registered", 503, nil, "target_tp_rank", "prefill_dp_rank", nil, "status 503"},
		{"too many ranks", 200, map[string]any{"attn_tp_size": 64, "dp_size": 8}, "target_tp_rank", "prefill_dp_rank", nil, "over 256"},
		{"bad size", 200, map[string]any{"attn_tp_size": 0}, "target_tp_rank", "prefill_dp_rank", nil, "attn_tp_size is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := bootstrapServer(t, tc.status, tc.topo, tc.tpName, tc.dpName)
			ranks, err := FetchRanks(t.Context(), srv.Client(), srv.URL)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range ranks {
				got = append(got, r.Addr)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("ranks %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRouteRewriterCountsAndRedirects: rank lookups are counted as
// rewritten or unmapped, and Redirect sends requests another way.
func TestRouteRewriterCountsAndRedirects(t *testing.T) {
	srv := bootstrapServer(t, 200, map[string]any{"attn_tp_size": 2}, "target_tp_rank", "prefill_dp_rank")
	u, _ := url.Parse(srv.URL)
	rr := NewRouteRewriter(u)
	defer rr.Close()
	rr.Map("127.0.0.1:7000", "127.0.0.1:9000")
	front := httptest.NewServer(rr)
	defer front.Close()
	ranks, err := FetchRanks(t.Context(), front.Client(), front.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 2 || ranks[0].Addr != "127.0.0.1:9000" || ranks[1].Addr != "127.0.0.1:7001" {
		t.Fatalf("ranks through the rewriter %v, want rank 0 at 127.0.0.1:9000", ranks)
	}
	if s := rr.Stats(); s.RankLookups != 2 || s.Rewritten != 1 || s.Unmapped != 1 || s.Requests != 3 {
		t.Fatalf("stats %+v, want 3 requests, 2 rank lookups, 1 rewritten, 1 unmapped", s)
	}
	rr.Redirect("127.0.0.1:1") // nothing listens there
	resp, err := front.Client().Get(front.URL + contract.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d through a redirect to a dead address, want 502", resp.StatusCode)
	}
	rr.Redirect("")
	resp, err = front.Client().Get(front.URL + contract.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d after the redirect was lifted, want 200", resp.StatusCode)
	}
}
