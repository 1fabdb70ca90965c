package harness

import "github.com/pdchaos/pdchaos/harness/check"

// JudgeLog judges a run's recorded log the way Run does: every checker
// (check.Judge with the scenario's load floor); then, when the log's end
// event says the run was interrupted, failures and skips become
// inconclusive and so does the verdict (a partial run proves nothing either
// way); and when it names a harness error, there is no verdict (""). Run and
// `pdchaos check` both use it, so a stored run judged again with unchanged
// checkers gets its stored verdict back.
func JudgeLog(evs []check.Event, c CheckSpec) (check.Checks, check.Status) {
	checks := check.Judge(evs, c.Floor())
	end := check.NewView(evs).End
	if end == nil {
		end = &check.EndInfo{}
	}
	if end.Interrupted {
		for i := range checks {
			if c := &checks[i]; c.Status == check.Fail || c.Status == check.Skip {
				c.Status, c.Summary = check.Inconclusive, "interrupted: "+c.Summary
			}
		}
	}
	switch {
	case end.Error != "":
		return checks, ""
	case end.Interrupted:
		return checks, check.Inconclusive
	}
	return checks, checks.Verdict()
}
