package check

import (
	"fmt"
	"math"
	"sort"

	"github.com/pdchaos/pdchaos/contract"
)

// exact is the tolerance of "equal to the baseline": gauges are counts and
// ratios of counts, so anything further off is a real difference.
const exact = 1e-9

// checkSlotsReleased: after the drain every slot gauge and KV usage equal
// their baseline (the first scrape) exactly, per rank where the log keeps
// ranks (below is as wrong as above); no page was ever owned twice and the
// page counts always added up to the pool. A family the check needs that
// an engine does not export makes it inconclusive, naming the family and
// the URL: absent is not zero. Where the recorder read an engine's live
// loads (Scrape.Logged set), its queues are judged by those, not by gauges
// that may be stale; evidence live_loads_scrapes counts such scrapes.
// The pdchaos engine's tables are judged where exported (SGLang has none,
// and loses nothing): each of contract.TableGauges back to its baseline
// after the drain like a slot gauge, and each of contract.OverdueGauges
// (entries their table's own expiry should have removed) 0 in every
// scrape. Where a scrape and the held rooms' records were taken at one
// instant (the simulator), every queue gauge also lies between the rooms
// that must be in it and those that may be (queuesAgree).
func checkSlotsReleased(v *View) CheckResult {
	srcs := make([]string, 0, len(v.Scrapes))
	for s := range v.Scrapes {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	var bad, errs []string
	ev := map[string]int64{"engines": 0, "gauges_checked": 0, "ranks_checked": 0, "scrapes": 0, "page_ranks_checked": 0, "live_loads_scrapes": 0,
		"tables_checked": 0, "overdue_samples_checked": 0}
	for _, src := range srcs {
		ss := v.Scrapes[src]
		ev["scrapes"] += int64(len(ss))
		for _, s := range ss {
			if s.Logged != nil {
				ev["live_loads_scrapes"]++
			}
		}
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
		for _, g := range contract.NeededGauges(last.EngineType) {
			if !last.Has(g) {
				errs = append(errs, fmt.Sprintf("metric family %s absent on %s", g, src))
			}
		}
		for _, g := range append(contract.SlotGauges(), contract.MetricTokenUsage) {
			if !last.Has(g) {
				continue
			}
			errs = append(errs, belowZero(g, src, first, last)...)
			ev["gauges_checked"]++
			b, e := backToBaseline(g, src, first, last, ev)
			bad, errs = append(bad, b...), append(errs, e...)
		}
		for _, g := range contract.TableGauges() {
			if !last.Has(g) {
				continue // pdchaos only: absent (SGLang) is not judged
			}
			errs = append(errs, belowZero(g, src, first, last)...)
			ev["tables_checked"]++
			b, e := backToBaseline(g, src, first, last, ev)
			bad, errs = append(bad, b...), append(errs, e...)
		}
		bad = append(bad, pageAccounting(src, ss, ev)...)
		bad = append(bad, overdue(src, ss, ev)...)
	}
	ev["slots_held"] = int64(len(bad))
	ev["wedges"] = int64(len(v.Wedges))
	wrong := queuesAgree(v, ev)
	switch {
	case len(wrong) > 0:
		r := result(contract.CheckSlotsReleased, Fail, ev, "queue gauges disagree with the rooms held at the same instant: %s", joinLimit(wrong, 2))
		r.Details = append(append(r.Details, wrong...), bad...)
		r.Stuck, _ = v.stuckRooms(maxStuck)
		return r
	case len(bad) > 0:
		r := result(contract.CheckSlotsReleased, Fail, ev, "after the drain: %s", joinLimit(bad, 4))
		r.Details = append(r.Details, bad...)
		for _, w := range v.Wedges {
			r.Details = append(r.Details, w.String())
		}
		r.Stuck, _ = v.stuckRooms(maxStuck)
		return r
	case len(errs) > 0:
		r := result(contract.CheckSlotsReleased, Inconclusive, ev, "%s", joinLimit(errs, 3))
		r.Details = errs
		return r
	case ev["engines"] == 0:
		return result(contract.CheckSlotsReleased, Inconclusive, ev, "no successful scrape")
	}
	how := ""
	if ev["live_loads_scrapes"] > 0 {
		how = ", queues read live from /v1/loads"
	}
	if ev["tables_checked"] > 0 {
		how += fmt.Sprintf(", %d engine tables too", ev["tables_checked"])
	}
	if ev["queue_readings_checked"] > 0 {
		how += fmt.Sprintf("; %d queue readings agree with the rooms held", ev["queue_readings_checked"])
	}
	return result(contract.CheckSlotsReleased, Pass, ev, "%d gauges on %d engines (%d rank series) back to their baseline%s",
		ev["gauges_checked"], ev["engines"], ev["ranks_checked"], how)
}

// belowZero names the series of gauge g below zero in the first or last
// scrape: these are counts (and a ratio of counts), so a negative one is a
// broken exporter, and "back to a baseline of -1" proves nothing. The
// recorder refuses such scrapes; older or foreign logs may still hold them.
func belowZero(g, src string, scrapes ...*Scrape) []string {
	var out []string
	for _, s := range scrapes {
		which := "baseline"
		if s == scrapes[len(scrapes)-1] {
			which = "last scrape"
		}
		keys := make([]string, 0, len(s.Ranks[g]))
		for k := range s.Ranks[g] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if v := s.Ranks[g][k]; v < 0 {
				out = append(out, fmt.Sprintf("%s{%s}=%g on %s in the %s: a count below zero (the exporter is broken)", g, k, v, src, which))
			}
		}
		if v, ok := s.Gauges[g]; ok && v < 0 && len(keys) == 0 {
			out = append(out, fmt.Sprintf("%s=%g on %s in the %s: a count below zero (the exporter is broken)", g, v, src, which))
		}
		if scrapes[0] == scrapes[len(scrapes)-1] {
			break
		}
	}
	return out
}

// backToBaseline compares gauge g of the last scrape with the first, per
// rank when both scrapes keep ranks. Such logs come from a recorder that
// scrapes once before any load, so the first scrape is an idle baseline. A
// rank the baseline lacks starts from 0 for slot gauges; for KV usage its
// baseline is unknown, which is an error, not a pass. Older logs (sums
// only) may have a first scrape under load: there a slot gauge must be 0
// and KV usage not above its first value, as they were judged then.
func backToBaseline(g, src string, first, last *Scrape, ev map[string]int64) (bad, errs []string) {
	usage := g == contract.MetricTokenUsage
	if last.Ranks[g] != nil && first.Ranks != nil {
		keys := make([]string, 0, len(last.Ranks[g]))
		for k := range last.Ranks[g] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ev["ranks_checked"]++
			base, ok := first.Ranks[g][k]
			if !ok && usage {
				errs = append(errs, fmt.Sprintf("%s{%s} on %s has no baseline", g, k, src))
				continue
			}
			if now := last.Ranks[g][k]; math.Abs(now-base) > exact {
				bad = append(bad, fmt.Sprintf("%s{%s}=%g on %s (baseline %g)", g, k, now, src, base))
			}
		}
		return bad, errs
	}
	now := last.Gauges[g]
	if !usage {
		if now != 0 {
			bad = append(bad, fmt.Sprintf("%s=%g on %s", g, now, src))
		}
		return bad, nil
	}
	if base := first.Gauges[g]; now > base+exact || now < -exact {
		bad = append(bad, fmt.Sprintf("%s=%g on %s (baseline %g)", g, now, src, base))
	}
	return bad, nil
}

// pageAccounting reads every scrape's page accounting: on each rank no page
// owned twice and pages in use plus free equal to the pool. It reports the
// first violation of each rank.
func pageAccounting(src string, ss []Scrape, ev map[string]int64) []string {
	var bad []string
	seen := map[string]bool{}
	for _, s := range ss {
		if s.Err != "" {
			continue
		}
		totals := s.Ranks[contract.MetricPagesTotal]
		keys := make([]string, 0, len(totals))
		for k := range totals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ev["page_ranks_checked"]++
			total := totals[k]
			used, free := s.Ranks[contract.MetricPagesUsed][k], s.Ranks[contract.MetricPagesFree][k]
			twice := s.Ranks[contract.MetricPagesOwnedTwice][k]
			if seen[k] || (twice == 0 && math.Abs(used+free-total) <= exact) {
				continue
			}
			seen[k] = true
			bad = append(bad, fmt.Sprintf("pages on %s {%s}: %g owned twice, %g in use + %g free of %g",
				src, k, twice, used, free, total))
		}
	}
	return bad
}

// overdue reads every scrape's overdue-entry gauges (contract.OverdueGauges):
// each must be 0, since the table's own expiry should have removed those
// entries ("never expires" shows here long before the table has grown).
// It reports the first violation of each gauge and rank, with its value.
func overdue(src string, ss []Scrape, ev map[string]int64) []string {
	var bad []string
	seen := map[string]bool{}
	for i, s := range ss {
		if s.Err != "" {
			continue
		}
		for _, g := range contract.OverdueGauges() {
			keys := make([]string, 0, len(s.Ranks[g]))
			for k := range s.Ranks[g] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) == 0 && s.Has(g) {
				keys = append(keys, "") // a log with sums only
			}
			for _, k := range keys {
				v, ok := s.Ranks[g][k]
				if !ok {
					v = s.Gauges[g]
				}
				ev["overdue_samples_checked"]++
				if v == 0 || seen[g+k] {
					continue
				}
				seen[g+k] = true
				bad = append(bad, fmt.Sprintf("%s{%s}=%g on %s in scrape %d of %d: entries past their table's expiry",
					g, k, v, src, i+1, len(ss)))
			}
		}
	}
	return bad
}
