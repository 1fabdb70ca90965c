package check

import "github.com/pdchaos/pdchaos/contract"

// checkNoLeaks: no goroutine left after the in-process target closed.
func checkNoLeaks(v *View) CheckResult {
	switch {
	case v.Leaks == nil:
		return result(contract.CheckNoLeaks, Inconclusive, map[string]int64{}, "not checked (the run did not finish)")
	case !v.Leaks.Checked:
		return result(contract.CheckNoLeaks, Skip, map[string]int64{}, "%s", v.Leaks.Detail)
	}
	ev := map[string]int64{"leaked_goroutines": int64(v.Leaks.Leaked), "checked": 1}
	if v.Leaks.Leaked > 0 {
		r := result(contract.CheckNoLeaks, Fail, ev, "%d goroutines left after shutdown", v.Leaks.Leaked)
		r.Details = []string{v.Leaks.Detail}
		return r
	}
	return result(contract.CheckNoLeaks, Pass, ev, "no goroutine left after shutdown")
}
