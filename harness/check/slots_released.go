package check

import (
	"fmt"
	"sort"

	"github.com/pdchaos/pdchaos/contract"
)

// checkSlotsReleased: every PD queue gauge and running count back to 0 and
// KV usage back to its baseline, on the last scrape of every engine.
func checkSlotsReleased(v *View) CheckResult {
	srcs := make([]string, 0, len(v.Scrapes))
	for s := range v.Scrapes {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	var bad, errs []string
	ev := map[string]int64{"engines": 0, "gauges_checked": 0, "scrapes": 0}
	for _, src := range srcs {
		ss := v.Scrapes[src]
		ev["scrapes"] += int64(len(ss))
		var first, last *Scrape
		for i := range ss {
			if ss[i].Err == "" {
				if first == nil {
					first = &ss[i]
				}
				last = &ss[i]
			}
		}
		if last == nil || ss[len(ss)-1].Err != "" {
			errs = append(errs, fmt.Sprintf("%s: last scrape failed: %s", src, ss[len(ss)-1].Err))
			continue
		}
		ev["engines"]++
		for _, g := range contract.SlotGauges() {
			ev["gauges_checked"]++
			if val := last.Gauges[g]; val != 0 {
				bad = append(bad, fmt.Sprintf("%s=%g on %s", g, val, src))
			}
		}
		if base, now := first.Gauges[contract.MetricTokenUsage], last.Gauges[contract.MetricTokenUsage]; now > base+1e-9 {
			bad = append(bad, fmt.Sprintf("%s=%g on %s (baseline %g)", contract.MetricTokenUsage, now, src, base))
		}
	}
	ev["slots_held"] = int64(len(bad))
	ev["wedges"] = int64(len(v.Wedges))
	switch {
	case len(bad) > 0:
		r := result(contract.CheckSlotsReleased, Fail, ev, "after the drain: %s", joinLimit(bad, 4))
		for _, w := range v.Wedges {
			r.Details = append(r.Details, w.String())
		}
		r.Stuck, _ = v.stuckRooms(maxStuck)
		return r
	case len(errs) > 0:
		r := result(contract.CheckSlotsReleased, Inconclusive, ev, "%s", joinLimit(errs, 3))
		return r
	case ev["engines"] == 0:
		return result(contract.CheckSlotsReleased, Inconclusive, ev, "no successful scrape")
	}
	return result(contract.CheckSlotsReleased, Pass, ev, "%d gauges on %d engines back to 0", ev["gauges_checked"], ev["engines"])
}
