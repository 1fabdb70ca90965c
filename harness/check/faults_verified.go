package check

import (
	"fmt"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// checkFaultsVerified: every scheduled fault applied and took effect; client
// faults (cancels, kills) are counted from the outcomes.
func checkFaultsVerified(v *View) CheckResult {
	ev := map[string]int64{"windows": int64(len(v.Faults))}
	for _, o := range v.Outcomes {
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
	for i, f := range v.Faults {
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
		if v.Faults[last[n]].Evidence.Effective {
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
