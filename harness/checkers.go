package harness

import (
	"fmt"
	"sort"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// maxStuck bounds the stuck rooms a failure lists in full.
const maxStuck = 20

// checkRoomsTerminal: every room reached Success/Failed and was cleared.
func checkRoomsTerminal(v *view) CheckResult {
	seen := map[string]bool{}
	cleared := int64(0)
	for src, snaps := range v.rooms {
		for _, s := range snaps {
			for _, r := range s.Held {
				seen[fmt.Sprintf("%s/%d", src, r.Room)] = true
			}
		}
	}
	var errs []string
	for src, s := range v.final {
		if s.Err != "" {
			errs = append(errs, s.Err)
		}
		cleared += int64(s.Cleared)
		for _, r := range s.Held {
			seen[fmt.Sprintf("%s/%d", src, r.Room)] = true
		}
	}
	stuck, total := v.stuckRooms(maxStuck)
	ev := map[string]int64{"rooms_seen_held": int64(len(seen)), "rooms_cleared": cleared, "rooms_held": int64(total),
		"engines": int64(len(v.final))}
	ev["rooms_checked"] = max(ev["rooms_seen_held"], cleared)
	switch {
	case len(v.final) == 0:
		return result(contract.CheckRoomsTerminal, Skip, ev, "the target exposes no /debug/rooms")
	case total > 0:
		r := result(contract.CheckRoomsTerminal, Fail, ev, "%d rooms still held after the drain (first: room %d on %s, state %s, stuck since %v)",
			total, stuck[0].Room, stuck[0].Role, stuck[0].State, stuck[0].Since)
		r.Stuck = stuck
		return r
	case len(errs) > 0:
		r := result(contract.CheckRoomsTerminal, Inconclusive, ev, "final rooms snapshot failed: %s", joinLimit(errs, 3))
		return r
	case ev["rooms_checked"] == 0:
		return result(contract.CheckRoomsTerminal, Inconclusive, ev, "no room was ever seen: nothing to judge")
	}
	return result(contract.CheckRoomsTerminal, Pass, ev, "%d rooms checked, none held", ev["rooms_checked"])
}

// checkSlotsReleased: every PD queue gauge and running count back to 0 and
// KV usage back to its baseline, on the last scrape of every engine.
func checkSlotsReleased(v *view) CheckResult {
	srcs := make([]string, 0, len(v.scrapes))
	for s := range v.scrapes {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	var bad, errs []string
	ev := map[string]int64{"engines": 0, "gauges_checked": 0, "scrapes": 0}
	for _, src := range srcs {
		ss := v.scrapes[src]
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
	ev["wedges"] = int64(len(v.wedges))
	switch {
	case len(bad) > 0:
		r := result(contract.CheckSlotsReleased, Fail, ev, "after the drain: %s", joinLimit(bad, 4))
		for _, w := range v.wedges {
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

// checkLiveness: fresh probe requests after the drain completed correctly.
func checkLiveness(v *view) CheckResult {
	ok := int64(0)
	var errs []string
	for _, p := range v.probes {
		if p.OK {
			ok++
		} else {
			errs = append(errs, p.Error)
		}
	}
	ev := map[string]int64{"probes": int64(len(v.probes)), "probes_ok": ok}
	switch {
	case len(v.probes) == 0:
		return result(contract.CheckLiveness, Inconclusive, ev, "no probe was sent")
	case len(errs) > 0:
		r := result(contract.CheckLiveness, Fail, ev, "%d of %d probes failed: %s", len(errs), len(v.probes), joinLimit(errs, 2))
		for _, w := range v.wedges {
			r.Details = append(r.Details, w.String())
		}
		r.Stuck, _ = v.stuckRooms(maxStuck)
		return r
	}
	return result(contract.CheckLiveness, Pass, ev, "%d probes answered correctly", ok)
}

// outcomeCounts counts outcomes by kind; cancels exclude the swarm's own stop.
func outcomeCounts(os []outcome.Outcome) map[string]int64 {
	ev := map[string]int64{"requests": int64(len(os))}
	for _, o := range os {
		ev[string(o.Kind)]++
		if o.Kind == outcome.KindCancelled && o.Reason != outcome.ReasonStop {
			ev["cancels"]++
		}
	}
	return ev
}

// checkClientOutcomes: no hung request; every error carries a status or message.
func checkClientOutcomes(v *view) CheckResult {
	ev := outcomeCounts(v.outcomes)
	var bad []string
	for _, o := range v.outcomes {
		switch {
		case o.Kind == outcome.KindHung:
			bad = append(bad, fmt.Sprintf("hung: agent %d turn %d room %d phase %s after %v", o.Agent, o.Turn, o.Room, o.Phase, o.End-o.Start))
		case o.Kind == outcome.KindError && o.Status == 0 && o.Message == "":
			bad = append(bad, fmt.Sprintf("malformed error: agent %d turn %d room %d", o.Agent, o.Turn, o.Room))
		}
	}
	switch {
	case len(v.outcomes) == 0:
		return result(contract.CheckClientOutcomes, Inconclusive, ev, "no request outcome recorded")
	case len(bad) > 0:
		r := result(contract.CheckClientOutcomes, Fail, ev, "%d bad outcomes: %s", len(bad), joinLimit(bad, 3))
		r.Details = bad
		return r
	}
	return result(contract.CheckClientOutcomes, Pass, ev, "%d requests, none hung, errors well-formed", len(v.outcomes))
}

// checkIntegrity: every completed answer matched the model.
func checkIntegrity(v *view) CheckResult {
	ev := map[string]int64{"completed_checked": 0, "violations": 0}
	var bad []string
	for _, o := range v.outcomes {
		if o.Kind != outcome.KindCompleted {
			continue
		}
		ev["completed_checked"]++
		if o.Integrity != "" {
			ev["violations"]++
			bad = append(bad, fmt.Sprintf("room %d (agent %d turn %d): %s", o.Room, o.Agent, o.Turn, o.Integrity))
		}
	}
	// The bundled engine also witnesses corruption itself: a late KV write
	// that landed in pages another request owns. Its victim may have been
	// cancelled before anyone read its answer, so count it on its own.
	for src, ss := range v.scrapes {
		for i := len(ss) - 1; i >= 0; i-- {
			if ss[i].Err != "" {
				continue
			}
			if n := int64(ss[i].Counters[contract.MetricForeignWrites]); n > 0 {
				ev["foreign_kv_writes"] += n
				bad = append(bad, fmt.Sprintf("%s: %d late KV writes landed in pages another request owned (%s)", src, n, contract.MetricForeignWrites))
			}
			break
		}
	}
	switch {
	case len(bad) > 0:
		r := result(contract.CheckIntegrity, Fail, ev, "%d corruption findings: %s", len(bad), joinLimit(bad, 2))
		r.Details = bad
		return r
	case v.run.AnswersUnchecked:
		return result(contract.CheckIntegrity, Skip, ev, "answers not compared: the target's model is not pdchaos's (--check-answers)")
	case ev["completed_checked"] == 0:
		return result(contract.CheckIntegrity, Inconclusive, ev, "no completed answer to check")
	}
	return result(contract.CheckIntegrity, Pass, ev, "%d answers matched the model", ev["completed_checked"])
}

// checkNoLeaks: no goroutine left after the in-process target closed.
func checkNoLeaks(v *view) CheckResult {
	switch {
	case v.leaks == nil:
		return result(contract.CheckNoLeaks, Inconclusive, map[string]int64{}, "not checked (the run did not finish)")
	case !v.leaks.Checked:
		return result(contract.CheckNoLeaks, Skip, map[string]int64{}, "%s", v.leaks.Detail)
	}
	ev := map[string]int64{"leaked_goroutines": int64(v.leaks.Leaked), "checked": 1}
	if v.leaks.Leaked > 0 {
		r := result(contract.CheckNoLeaks, Fail, ev, "%d goroutines left after shutdown", v.leaks.Leaked)
		r.Details = []string{v.leaks.Detail}
		return r
	}
	return result(contract.CheckNoLeaks, Pass, ev, "no goroutine left after shutdown")
}

// checkFaultsVerified: every scheduled fault applied and took effect; client
// faults (cancels, kills) are counted from the outcomes.
func checkFaultsVerified(v *view) CheckResult {
	ev := map[string]int64{"windows": int64(len(v.faults))}
	for _, o := range v.outcomes {
		switch o.Reason {
		case outcome.ReasonCancel, outcome.ReasonDeadline:
			ev["client_cancels"]++
		case outcome.ReasonKill, outcome.ReasonKillAll:
			ev["client_kills"]++
		}
	}
	last := map[string]int{}
	var names []string
	var failed []string
	for i, f := range v.faults {
		if _, ok := last[f.Fault]; !ok {
			names = append(names, f.Fault)
		}
		last[f.Fault] = i
		if f.Applied {
			ev["windows_applied"]++
		} else {
			failed = append(failed, fmt.Sprintf("%s: %s", f.Fault, f.Error))
		}
	}
	var unverified []string
	for _, n := range names {
		if v.faults[last[n]].Evidence.Effective {
			ev["faults_verified"]++
		} else {
			unverified = append(unverified, n)
		}
	}
	ev["faults"] = int64(len(names))
	ev["client_faults_verified"] = ev["client_cancels"] + ev["client_kills"]
	switch {
	case len(failed) > 0:
		return result(contract.CheckFaultsVerified, Inconclusive, ev, "%d windows failed to inject: %s", len(failed), joinLimit(failed, 2))
	case len(unverified) > 0:
		return result(contract.CheckFaultsVerified, Inconclusive, ev, "faults with no evidence of effect: %s", joinLimit(unverified, 3))
	case len(names) == 0 && ev["client_faults_verified"] == 0:
		return result(contract.CheckFaultsVerified, Pass, ev, "no fault planned")
	}
	return result(contract.CheckFaultsVerified, Pass, ev, "%d scheduled faults verified in %d windows; %d client cancels, %d kills",
		ev["faults_verified"], ev["windows_applied"], ev["client_cancels"], ev["client_kills"])
}

// checkLoadFloor: enough requests and cancels to mean something.
func checkLoadFloor(v *view, spec CheckSpec) CheckResult {
	ev := outcomeCounts(v.outcomes)
	ev["min_requests"], ev["min_cancels"] = int64(spec.MinRequests), int64(spec.MinCancels)
	if ev["requests"] < int64(spec.MinRequests) || ev["cancels"] < int64(spec.MinCancels) {
		return result(contract.CheckLoadFloor, Inconclusive, ev, "load floor not reached: %d requests (want %d), %d cancels (want %d)",
			ev["requests"], spec.MinRequests, ev["cancels"], spec.MinCancels)
	}
	return result(contract.CheckLoadFloor, Pass, ev, "%d requests, %d cancels", ev["requests"], ev["cancels"])
}
