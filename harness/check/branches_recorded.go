package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

// checkBranchesRecorded: every time the engine took a branch that refuses
// or drops something (a late write, a stray chunk, a malformed KV
// message, a Failed notice sent), it wrote the room event its probe says
// it writes (contract.Probe.Records), exactly once. A branch that does
// its work and leaves no trace is the silent wedge's accomplice: the
// operator reading /debug/rooms sees a room end, or stay, with no reason.
// Both sides are checked: fewer events than hits is a branch gone quiet,
// more is an event written where no probe says the branch ran. Each role
// is held to its own probes; the engine counts events it did not keep (a
// room it never knew) too. Skipped when no role reported its events (an
// external deployment, or an engine older than the count).
func checkBranchesRecorded(v *View) CheckResult {
	ev := map[string]int64{}
	var heads, details []string
	checked := 0
	for _, src := range slices.Sorted(maps.Keys(v.CodeProbes)) {
		cp := v.CodeProbes[src]
		if cp.Err != "" || cp.Recorded == nil {
			continue
		}
		byKind := contract.ProbesRecording(cp.Role)
		for _, kind := range slices.Sorted(maps.Keys(byKind)) {
			checked++
			var want int64
			var names []string
			for _, p := range byKind[kind] {
				want += cp.Hits[p.Name]
				names = append(names, fmt.Sprintf("%s %d", p.Name, cp.Hits[p.Name]))
			}
			got := cp.Recorded[kind]
			ev["events_"+cp.Role+"_"+kind] += got
			if got == want {
				continue
			}
			heads = append(heads, fmt.Sprintf("%s wrote %d %q events for %d probe hits", cp.Role, got, kind, want))
			details = append(details, fmt.Sprintf("%s (%s): %d %q room events recorded, probe hits %s", cp.Role, src, got, kind, strings.Join(names, ", ")))
		}
	}
	ev["kinds_checked"] = int64(checked)
	ev["kinds_mismatched"] = int64(len(heads))
	if checked == 0 {
		return result(contract.CheckBranchesRecorded, Skip, ev, "no role reported the room events it recorded")
	}
	if len(heads) == 0 {
		return result(contract.CheckBranchesRecorded, Pass, ev, "every probed branch wrote its room event once per hit (%d event kinds checked)", checked)
	}
	r := result(contract.CheckBranchesRecorded, Fail, ev, "%d event kinds do not add up to their branches' probe hits: %s", len(heads), joinLimit(heads, 3))
	r.Details = details
	return r
}
