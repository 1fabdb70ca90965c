package check

import (
	"fmt"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

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
func checkClientOutcomes(v *View) CheckResult {
	ev := outcomeCounts(v.Outcomes)
	var bad []string
	for _, o := range v.Outcomes {
		switch {
		case o.Kind == outcome.KindHung:
			bad = append(bad, fmt.Sprintf("hung: agent %d turn %d room %d phase %s after %v", o.Agent, o.Turn, o.Room, o.Phase, o.End-o.Start))
		case o.Kind == outcome.KindError && o.Status == 0 && o.Message == "":
			bad = append(bad, fmt.Sprintf("malformed error: agent %d turn %d room %d", o.Agent, o.Turn, o.Room))
		}
	}
	switch {
	case len(v.Outcomes) == 0:
		return result(contract.CheckClientOutcomes, Inconclusive, ev, "no request outcome recorded")
	case len(bad) > 0:
		r := result(contract.CheckClientOutcomes, Fail, ev, "%d bad outcomes: %s", len(bad), joinLimit(bad, 3))
		r.Details = bad
		return r
	}
	return result(contract.CheckClientOutcomes, Pass, ev, "%d requests, none hung, errors well-formed", len(v.Outcomes))
}
