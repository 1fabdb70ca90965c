package core

import "github.com/pdchaos/pdchaos/contract"

// RouteRank answers a /route lookup of prefill's bootstrap server for one
// rank (q not a topology query): the rank's index when prefill has it. A
// rank it lacks (a decode configured for another TP size, or a peer that
// is not decode) is refused, and the runtime answers 404; the bundled
// prefill has one DP, CP and PP group, so any other index there is
// lacking too.
func (p *Prefill) RouteRank(q contract.RouteQuery) (int, bool) {
	r := q.Rank
	if r.DP != 0 || r.CP != 0 || r.PP != 0 || r.TP < 0 || r.TP >= len(p.ranks) {
		p.probes.Hit(contract.ProbePrefillRouteUnknownRank)
		return 0, false
	}
	return r.TP, true
}

// RouteTopology is what prefill's bootstrap server answers to the
// topology query (every index -1), in any era's keys.
func (p *Prefill) RouteTopology() contract.RouteTopology {
	return contract.RouteTopology{DP: 1, CP: 1, TP: len(p.ranks), PP: 1, PageSize: p.cfg.PageSize,
		KVCacheDtype: "auto", FollowBootstrapRoom: true}
}
