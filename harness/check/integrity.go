package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// checkIntegrity: every completed answer matched the model, no late KV
// write landed in another request's pages, every garbled control message
// was refused, no prefill rank wrote Success for KV decode never held
// (successesUnreceived), and no transfer decode committed and decoded from
// was failed by prefill after it (committedDisowned).
func checkIntegrity(v *View) CheckResult {
	ev := map[string]int64{"completed_checked": 0, "violations": 0}
	var bad []string
	for _, o := range v.Outcomes {
		// A whole answer read after the client's abort_request (the abort
		// raced its last token) is checked as any other.
		if o.Kind != outcome.KindCompleted && o.AnswerAfterAbort != outcome.AnswerCompleted {
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
	for src, ss := range v.Scrapes {
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
	bad = append(bad, v.garbledAccepted(ev)...)
	recs := roomsByRole(v)
	if lost := v.successesUnreceived(recs); len(lost) > 0 {
		ev["successes_unreceived"] = int64(len(lost))
		bad = append(bad, lost...)
	}
	if late := v.writesAfterAck(recs[contract.SideDecode], ev); len(late) > 0 {
		bad = append(bad, late...)
	}
	if late := v.writesAfterFailure(recs[contract.SidePrefill], recs[contract.SideDecode], ev); len(late) > 0 {
		bad = append(bad, late...)
	}
	if disowned := v.committedDisowned(recs); len(disowned) > 0 {
		ev["commits_disowned"] = int64(len(disowned))
		bad = append(bad, disowned...)
	}
	switch {
	case len(bad) > 0:
		r := result(contract.CheckIntegrity, Fail, ev, "%d corruption findings: %s", len(bad), joinLimit(bad, 2))
		r.Details = bad
		return r
	case v.Run.AnswersUnchecked:
		return result(contract.CheckIntegrity, Skip, ev, "answers not compared: the target's model is not pdchaos's (--check-answers)")
	case ev["completed_checked"] == 0:
		return result(contract.CheckIntegrity, Inconclusive, ev, "no completed answer to check")
	}
	return result(contract.CheckIntegrity, Pass, ev, "%d answers matched the model", ev["completed_checked"])
}

// garbledAccepted compares what corrupt-messages garbled with what the
// receiving engine refused: a garbled room or port parses as nothing, so
// every such message must be counted as malformed (contract.
// MetricMalformedControl) by prefill (control/N) or decode (notify/N); one
// taken as valid is a parser reading garbage as a room. Only windows no
// other fault overlapped are judged (a reset could lose a garbled message
// on the way), only garble mode (a truncated layout may still parse), only
// where the engine exports the counter (the bundled engine), and only on a
// receiver no one killed (a dead process's count since its last scrape,
// and the messages it had not read, are lost with it).
func (v *View) garbledAccepted(ev map[string]int64) []string {
	last := map[string]int{}
	for i, f := range v.Faults {
		last[f.Fault] = i
	}
	garbled := map[string]int64{} // receiving engine type -> messages
	links := map[string][]string{}
	for name, i := range last {
		link, mode, ok := faults.ParseCorruptName(name)
		if !ok || mode != faults.CorruptGarble || v.overlapsOtherFault(name) {
			continue
		}
		recv := ""
		switch {
		case strings.HasPrefix(link, "control/"):
			recv = contract.SidePrefill
		case strings.HasPrefix(link, "notify/"):
			recv = contract.SideDecode
		default:
			continue
		}
		// The last record of a fault carries its evidence over every window.
		garbled[recv] += v.Faults[i].Evidence.Counters["corrupted"]
		links[recv] = append(links[recv], link)
	}
	var bad []string
	for _, recv := range slices.Sorted(maps.Keys(garbled)) {
		n := garbled[recv]
		refused, ok := v.counterGrowth(recv, contract.MetricMalformedControl)
		if !ok || n == 0 {
			continue
		}
		if v.roleKilled(recv) {
			ev["garbled_unjudged"] += n
			continue
		}
		ev["garbled_sent"] += n
		ev["garbled_refused"] += refused
		if refused < n {
			bad = append(bad, fmt.Sprintf("%s refused %d of %d control messages garbled on %s (%s): the rest were read as valid",
				recv, refused, n, strings.Join(slices.Compact(slices.Sorted(slices.Values(links[recv]))), ", "), contract.MetricMalformedControl))
		}
	}
	return bad
}

// overlapsOtherFault reports whether a window of another fault overlapped
// a window of name.
func (v *View) overlapsOtherFault(name string) bool {
	for _, a := range v.Faults {
		if a.Fault != name || !a.Applied {
			continue
		}
		for _, b := range v.Faults {
			if b.Fault == name || !b.Applied {
				continue
			}
			aEnd, bEnd := a.End, b.End
			if aEnd == 0 {
				aEnd = math.MaxInt64
			}
			if bEnd == 0 {
				bEnd = math.MaxInt64
			}
			if a.Start <= bEnd && b.Start <= aEnd {
				return true
			}
		}
	}
	return false
}

// roleKilled reports whether a sigkill of role was applied in the run.
func (v *View) roleKilled(role string) bool {
	for _, f := range v.Faults {
		if f.Applied && killOf(f, role) {
			return true
		}
	}
	return false
}

// counterGrowth is how much counter grew over the run on the engines of
// type engineType (each source's increases between good scrapes, a drop
// read as the counter starting again from zero in a restarted process, as
// Prometheus reads one, summed over sources); false when none exports it.
func (v *View) counterGrowth(engineType, counter string) (int64, bool) {
	var total int64
	found := false
	for _, src := range slices.Sorted(maps.Keys(v.Scrapes)) {
		var prev *Scrape
		for i := range v.Scrapes[src] {
			sc := &v.Scrapes[src][i]
			if sc.Err != "" || sc.EngineType != engineType {
				continue
			}
			cur, has := sc.Counters[counter]
			if !has {
				continue
			}
			found = true
			switch {
			case prev == nil:
			case cur >= prev.Counters[counter]:
				total += int64(cur - prev.Counters[counter])
			default:
				total += int64(cur)
			}
			prev = sc
		}
	}
	return total, found
}
