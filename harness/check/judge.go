package check

import (
	"fmt"
	"strings"
)

// Load floor defaults: a run with fewer requests or client cancels than
// this proves nothing (DESIGN.md: refuse vacuous passes).
const (
	DefaultMinRequests = 20
	DefaultMinCancels  = 1
)

// Floor is the load floor the load-floor checker wants. Zero fields take
// DefaultMinRequests and DefaultMinCancels.
type Floor struct {
	// MinRequests is the fewest request outcomes a meaningful run has.
	MinRequests int
	// MinCancels is the fewest client cancels (the swarm's own stop aside).
	MinCancels int
}

// withDefaults fills zero fields.
func (f Floor) withDefaults() Floor {
	if f.MinRequests == 0 {
		f.MinRequests = DefaultMinRequests
	}
	if f.MinCancels == 0 {
		f.MinCancels = DefaultMinCancels
	}
	return f
}

// Judge runs every checker over a recorded log, in the fixed order of
// contract.CheckNames. It reads nothing but evs.
func Judge(evs []Event, floor Floor) Checks {
	floor = floor.withDefaults()
	v := NewView(evs)
	return Checks{
		checkRoomsTerminal(v), checkSlotsReleased(v), checkLiveness(v), checkClientOutcomes(v),
		checkCancelsReached(v), checkTimeoutsExplained(v), checkIntegrity(v), checkUnreachableBranches(v), checkBranchesRecorded(v), checkNoLeaks(v), checkFaultsVerified(v), checkLoadFloor(v, floor),
	}
}

// result builds one checker's result with a formatted summary.
func result(name string, st Status, ev map[string]int64, format string, a ...any) CheckResult {
	return CheckResult{Name: name, Status: st, Evidence: ev, Summary: fmt.Sprintf(format, a...)}
}

// joinLimit joins the first n of xs and counts the rest.
func joinLimit(xs []string, n int) string {
	if len(xs) > n {
		return strings.Join(xs[:n], "; ") + fmt.Sprintf("; … %d more", len(xs)-n)
	}
	return strings.Join(xs, "; ")
}
