package check

import "github.com/pdchaos/pdchaos/contract"

// checkLoadFloor: enough requests and cancels to mean something.
func checkLoadFloor(v *View, spec Floor) CheckResult {
	ev := outcomeCounts(v.Outcomes)
	ev["min_requests"], ev["min_cancels"] = int64(spec.MinRequests), int64(spec.MinCancels)
	if ev["requests"] < int64(spec.MinRequests) || ev["cancels"] < int64(spec.MinCancels) {
		return result(contract.CheckLoadFloor, Inconclusive, ev, "load floor not reached: %d requests (want %d), %d cancels (want %d)",
			ev["requests"], spec.MinRequests, ev["cancels"], spec.MinCancels)
	}
	return result(contract.CheckLoadFloor, Pass, ev, "%d requests, %d cancels", ev["requests"], ev["cancels"])
}
