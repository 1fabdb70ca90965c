package contract

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Each era's own query reads back as that era, rank and all; every era's
// names at once read as the newest; a query that fits no era is refused
// naming each era's names.
func TestParseRouteQuery(t *testing.T) {
	rank := RouteRank{DP: 0, CP: 0, TP: 3, PP: 0}
	for _, d := range RouteDialects() {
		for _, r := range []RouteRank{rank, TopologyQuery} {
			q, err := url.ParseQuery(d.Query(r))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseRouteQuery(q)
			if err != nil {
				t.Fatalf("%s %+v: %v", d.Name, r, err)
			}
			if got.Dialect.Name != d.Name || got.Topology != (r == TopologyQuery) {
				t.Errorf("%s %+v read as %s, topology %v", d.Name, r, got.Dialect.Name, got.Topology)
			}
			if !got.Topology && got.Rank != rank {
				t.Errorf("%s: rank %+v read as %+v", d.Name, rank, got.Rank)
			}
		}
	}
	q, _ := url.ParseQuery(RouteQueryAll(RouteRank{DP: 1, CP: 0, TP: 2, PP: 0}))
	if got, err := ParseRouteQuery(q); err != nil || got.Dialect.Name != RouteDialects()[0].Name || got.Rank != (RouteRank{DP: 1, TP: 2}) {
		t.Errorf("every era's names at once: %+v, %v; want the newest era's reading", got, err)
	}
	for _, raw := range []string{"", "target_tp_rank=0&target_pp_rank=0", "engine_rank=1", "engine_rank=&target_dp_group=0", "engine_rank=one&target_dp_group=0"} {
		q, _ := url.ParseQuery(raw)
		_, err := ParseRouteQuery(q)
		if err == nil {
			t.Errorf("%q: accepted", raw)
			continue
		}
		if strings.Contains(raw, "one") {
			if !strings.Contains(err.Error(), `engine_rank="one"`) {
				t.Errorf("%q: %v, want it to name the bad index", raw, err)
			}
			continue
		}
		for _, d := range RouteDialects() {
			if !strings.Contains(err.Error(), d.Name+": "+d.Params[0].Name) {
				t.Errorf("%q: %v does not say what %s sends", raw, err, d.Name)
			}
		}
	}
}

// A topology answer carries exactly its era's keys, and RouteKeys finds
// every era's name of a size, so a client reads any era's answer.
func TestRouteAnswerAndKeys(t *testing.T) {
	topo := RouteTopology{DP: 2, CP: 1, TP: 4, PP: 1, PageSize: 64, KVCacheDtype: "auto", FollowBootstrapRoom: true}
	for _, d := range RouteDialects() {
		a := d.Answer(topo)
		if len(a) != len(d.Topology) {
			t.Errorf("%s: answer %v, want exactly %d keys", d.Name, a, len(d.Topology))
		}
		for _, k := range d.Topology {
			if k.Field == RouteTP && a[k.Name] != 4 || k.Field == RouteDP && a[k.Name] != 2 {
				t.Errorf("%s: %s = %v", d.Name, k.Name, a[k.Name])
			}
			if !slices.Contains(RouteKeys(k.Field), k.Name) {
				t.Errorf("RouteKeys misses %s's %s", d.Name, k.Name)
			}
		}
	}
	if got := RouteKeys(RouteTP); !slices.Equal(got, []string{"attn_tp_size", "prefill_attn_tp_size", "prefill_tp_size"}) {
		t.Errorf("RouteKeys(TP) = %v", got)
	}
}
