package check

import (
	"fmt"
	"sort"

	"github.com/pdchaos/pdchaos/contract"
)

// checkUnreachableBranches: no code probe the run should never hit was
// hit (contract.UnexpectedProbes). A defensive branch that ran on the
// fixed engine cleaned up after a bug the run would otherwise not show:
// the sweep that found a room status nothing owned hides the clear that
// forgot it. Skipped when no role reported probes (an external
// deployment has no /debug/probes).
func checkUnreachableBranches(v *View) CheckResult {
	hits := v.ProbeHits()
	if hits == nil {
		var why []string
		for role, cp := range v.CodeProbes {
			if cp.Err != "" {
				why = append(why, role+": "+cp.Err)
			}
		}
		sort.Strings(why)
		r := result(contract.CheckUnreachableBranches, Skip, map[string]int64{}, "no role reported its code probes")
		r.Details = why
		return r
	}
	var regs []string
	if v.Run.Engine != nil {
		regs = v.Run.Engine.Regressions
	}
	bad := contract.UnexpectedProbes(hits, regs)
	ev := map[string]int64{"probes_reported": int64(len(hits)), "unexpected_probes": int64(len(bad))}
	if len(bad) == 0 {
		return result(contract.CheckUnreachableBranches, Pass, ev, "no branch the engine must never take ran (%d probes reported)", len(hits))
	}
	var heads, details []string
	for _, u := range bad {
		why := "never on the fixed engine"
		if u.Probe.Regression != "" {
			why = "a branch of regression " + u.Probe.Regression + ", which is off"
		}
		ev["hits_"+u.Probe.Name] = u.Hits
		heads = append(heads, fmt.Sprintf("%s hit %d times (%s)", u.Probe.Name, u.Hits, why))
		details = append(details, fmt.Sprintf("%s at %v: %s", u.Probe.Name, u.Probe.Sites, u.Probe.Doc))
	}
	r := result(contract.CheckUnreachableBranches, Fail, ev, "%d branches the engine must never take ran: %s", len(bad), joinLimit(heads, 3))
	r.Details = details
	return r
}
