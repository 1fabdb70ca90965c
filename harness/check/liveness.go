package check

import "github.com/pdchaos/pdchaos/contract"

// checkLiveness: fresh probe requests after the drain completed correctly.
func checkLiveness(v *View) CheckResult {
	ok := int64(0)
	var errs []string
	for _, p := range v.Probes {
		if p.OK {
			ok++
		} else {
			errs = append(errs, p.Error)
		}
	}
	ev := map[string]int64{"probes": int64(len(v.Probes)), "probes_ok": ok}
	switch {
	case len(v.Probes) == 0:
		return result(contract.CheckLiveness, Inconclusive, ev, "no probe was sent")
	case len(errs) > 0:
		r := result(contract.CheckLiveness, Fail, ev, "%d of %d probes failed: %s", len(errs), len(v.Probes), joinLimit(errs, 2))
		for _, w := range v.Wedges {
			r.Details = append(r.Details, w.String())
		}
		r.Stuck, _ = v.stuckRooms(maxStuck)
		return r
	}
	return result(contract.CheckLiveness, Pass, ev, "%d probes answered correctly", ok)
}
