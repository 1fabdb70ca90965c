package contract

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// RouteField is what one name of a /route query or answer stands for: a
// rank index (in a query) or a size (in the topology answer) along one
// parallel axis, or another fact of the topology answer.
type RouteField int

// The fields /route names carry.
const (
	RouteDP RouteField = iota
	RouteCP
	RouteTP
	RoutePP
	RoutePageSize
	RouteKVCacheDtype
	RouteFollowBootstrapRoom
)

// RouteName is one query parameter or answer key and what it stands for.
type RouteName struct {
	Name  string
	Field RouteField
}

// RouteDialect is one SGLang era's GET /route on prefill's bootstrap
// server (shared/reference/sglang-wire.md §1): the rank indices a decode
// of that era sends, every one required, and the keys of the topology
// answer it reads when every index is -1. A rank answer is
// {rank_ip, rank_port} in every era.
type RouteDialect struct {
	Name string
	// Params are the rank indices, in the order that era's decode sends them.
	Params []RouteName
	// Topology are the keys of the answer to the all -1 query.
	Topology []RouteName
}

// RouteDialects is the table of /route dialects, newest first. The bundled
// prefill answers each (ParseRouteQuery), the bundled decode asks in the
// newest, and the external target asks in all at once (RouteQueryAll) and
// reads sizes under every era's key (RouteKeys).
func RouteDialects() []RouteDialect {
	return []RouteDialect{
		{Name: "main@2026",
			Params: []RouteName{{"prefill_dp_rank", RouteDP}, {"prefill_cp_rank", RouteCP}, {"target_tp_rank", RouteTP}, {"target_pp_rank", RoutePP}},
			Topology: []RouteName{{"attn_tp_size", RouteTP}, {"attn_cp_size", RouteCP}, {"dp_size", RouteDP}, {"pp_size", RoutePP},
				{"page_size", RoutePageSize}, {"kv_cache_dtype", RouteKVCacheDtype}, {"follow_bootstrap_room", RouteFollowBootstrapRoom}}},
		{Name: "v0.5",
			Params:   []RouteName{{"engine_rank", RouteTP}, {"target_dp_group", RouteDP}, {"target_pp_rank", RoutePP}},
			Topology: []RouteName{{"prefill_attn_tp_size", RouteTP}, {"prefill_dp_size", RouteDP}, {"prefill_pp_size", RoutePP}}},
		{Name: "early-2025",
			Params:   []RouteName{{"engine_rank", RouteTP}, {"target_dp_group", RouteDP}},
			Topology: []RouteName{{"prefill_tp_size", RouteTP}, {"prefill_dp_size", RouteDP}}},
	}
}

// RouteRank names one prefill rank by its index along each axis. An axis
// a dialect does not name is 0.
type RouteRank struct{ DP, CP, TP, PP int }

// TopologyQuery is the rank every era's topology query names: -1 on every axis.
var TopologyQuery = RouteRank{DP: -1, CP: -1, TP: -1, PP: -1}

func (r RouteRank) index(f RouteField) int {
	switch f {
	case RouteDP:
		return r.DP
	case RouteCP:
		return r.CP
	case RouteTP:
		return r.TP
	}
	return r.PP
}

func (r *RouteRank) set(f RouteField, v int) {
	switch f {
	case RouteDP:
		r.DP = v
	case RouteCP:
		r.CP = v
	case RouteTP:
		r.TP = v
	default:
		r.PP = v
	}
}

// Query is the query string a decode of this era sends for rank r.
func (d RouteDialect) Query(r RouteRank) string {
	v := url.Values{}
	for _, p := range d.Params {
		v.Set(p.Name, strconv.Itoa(r.index(p.Field)))
	}
	return v.Encode()
}

// RouteQueryAll names r in every dialect at once, for a client that does
// not know the server's era: each server reads the names it knows and
// ignores the rest (aiohttp's query), and the newest it knows wins.
func RouteQueryAll(r RouteRank) string {
	v := url.Values{}
	for _, d := range RouteDialects() {
		for _, p := range d.Params {
			v.Set(p.Name, strconv.Itoa(r.index(p.Field)))
		}
	}
	return v.Encode()
}

// RouteKeys lists the topology answer's keys for f under every era's
// name, newest first, for a client reading an answer of any era.
func RouteKeys(f RouteField) []string {
	var out []string
	for _, d := range RouteDialects() {
		for _, k := range d.Topology {
			if k.Field == f && !slices.Contains(out, k.Name) {
				out = append(out, k.Name)
			}
		}
	}
	return out
}

// RouteTopology is what a bootstrap server tells of its prefill.
type RouteTopology struct {
	DP, CP, TP, PP, PageSize int
	KVCacheDtype             string
	FollowBootstrapRoom      bool
}

// Answer is the topology answer a server of this era gives, under this
// era's keys only (an older decode reads exactly these).
func (d RouteDialect) Answer(t RouteTopology) map[string]any {
	out := make(map[string]any, len(d.Topology))
	for _, k := range d.Topology {
		var v any
		switch k.Field {
		case RouteDP:
			v = t.DP
		case RouteCP:
			v = t.CP
		case RouteTP:
			v = t.TP
		case RoutePP:
			v = t.PP
		case RoutePageSize:
			v = t.PageSize
		case RouteKVCacheDtype:
			v = t.KVCacheDtype
		case RouteFollowBootstrapRoom:
			v = t.FollowBootstrapRoom
		}
		out[k.Name] = v
	}
	return out
}

// RouteQuery is a parsed GET /route query.
type RouteQuery struct {
	Dialect RouteDialect
	Rank    RouteRank
	// Topology: every index the dialect names is -1, which asks for the
	// topology rather than a rank.
	Topology bool
}

// ParseRouteQuery reads a /route query as a bootstrap server of every era
// would together: the newest dialect whose parameters are all present
// decides (so a query naming every era's parameters is read as the
// newest). A query that fits no era, or an index that is not an integer,
// is an error naming what each era needs: the server answers it 400, as
// SGLang's "Missing inputs for bootstrap server.".
func ParseRouteQuery(q url.Values) (RouteQuery, error) {
	dialects := RouteDialects()
	for _, d := range dialects {
		if !hasAll(q, d.Params) {
			continue
		}
		out := RouteQuery{Dialect: d, Topology: true}
		for _, p := range d.Params {
			raw := q.Get(p.Name)
			v, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil {
				return RouteQuery{}, fmt.Errorf("route query (%s): %s=%q is not an integer", d.Name, p.Name, raw)
			}
			out.Rank.set(p.Field, v)
			if v != -1 {
				out.Topology = false
			}
		}
		return out, nil
	}
	var need []string
	for _, d := range dialects {
		var names []string
		for _, p := range d.Params {
			names = append(names, p.Name)
		}
		need = append(need, fmt.Sprintf("%s: %s", d.Name, strings.Join(names, ", ")))
	}
	return RouteQuery{}, fmt.Errorf("route query: missing inputs for bootstrap server (each SGLang era names every index: %s)", strings.Join(need, "; "))
}

func hasAll(q url.Values, params []RouteName) bool {
	for _, p := range params {
		if q.Get(p.Name) == "" {
			return false
		}
	}
	return true
}
