package check

import (
	"fmt"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// checkIntegrity: every completed answer matched the model.
func checkIntegrity(v *View) CheckResult {
	ev := map[string]int64{"completed_checked": 0, "violations": 0}
	var bad []string
	for _, o := range v.Outcomes {
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
