package check

import (
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Status is a check's (or a run's) verdict.
type Status string

// Verdicts. Inconclusive means the run proves nothing either way (no load,
// a fault that did nothing, a capability the target lacks).
const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	Inconclusive Status = "inconclusive"
	// Skip means the check does not apply to this target (no /debug/rooms,
	// goroutines in other processes); it does not affect the verdict.
	Skip Status = "skip"
)

// CheckResult is one checker's judgement with its evidence: counts of what
// it looked at, and for failures the stuck rooms and details.
type CheckResult struct {
	Name     string           `json:"name"`
	Status   Status           `json:"status"`
	Summary  string           `json:"summary"`
	Evidence map[string]int64 `json:"evidence"`
	Stuck    []StuckRoom      `json:"stuck,omitempty"`
	Details  []string         `json:"details,omitempty"`
}

// StuckRoom is a room the engine still held after the drain: its state,
// history, since when it has not moved, and the faults active then.
type StuckRoom struct {
	Source       string           `json:"source"`
	Role         string           `json:"role"`
	Room         uint64           `json:"room"`
	State        string           `json:"state"`
	Ranks        map[int]string   `json:"ranks,omitempty"`
	Since        time.Duration    `json:"since"`
	ActiveFaults []string         `json:"active_faults,omitempty"`
	Events       []contract.Event `json:"events,omitempty"`
}

// Checks is the ordered result of every checker. Its Error returns the first
// failing check, so a test can write `if err := checks.Err(); err != nil`.
type Checks []CheckResult

// Error names the first failing check ("" if none failed).
func (c Checks) Error() string {
	for _, r := range c {
		if r.Status == Fail {
			return fmt.Sprintf("%s: %s", r.Name, r.Summary)
		}
	}
	return ""
}

// Err is c when a check failed, else nil.
func (c Checks) Err() error {
	if c.Error() == "" {
		return nil
	}
	return c
}

// Verdict is fail if any check failed, else inconclusive if any was, else pass.
func (c Checks) Verdict() Status {
	v := Pass
	for _, r := range c {
		switch r.Status {
		case Fail:
			return Fail
		case Inconclusive:
			v = Inconclusive
		}
	}
	return v
}

// Get returns the named check's result.
func (c Checks) Get(name string) (CheckResult, bool) {
	for _, r := range c {
		if r.Name == name {
			return r, true
		}
	}
	return CheckResult{}, false
}

// Failed lists the names of failing checks.
func (c Checks) Failed() []string {
	var out []string
	for _, r := range c {
		if r.Status == Fail {
			out = append(out, r.Name)
		}
	}
	return out
}
