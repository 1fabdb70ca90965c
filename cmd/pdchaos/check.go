package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/check"
)

// newCheckCmd re-judges stored runs with today's checkers.
func newCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use: "check RUN_DIR...",
		Short: "Judge stored runs again from their events.jsonl with today's checkers; print the stored and new " +
			"verdicts and every checker that changed; exit 0 all pass, 1 a failure, 2 inconclusive, 3 bad input",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return recheck(cmd.OutOrStdout(), args)
		},
	}
}

// recheck re-judges every directory, then exits with the worst outcome: bad
// input (3) over a failure (1) over inconclusive (2) over a run that ended
// in a harness error (3). Unreadable directories are named in the error,
// after the runs that could be judged are printed.
func recheck(out io.Writer, dirs []string) error {
	var bad []error
	verdicts := map[check.Status]int{}
	for _, dir := range dirs {
		rc, err := harness.RecheckRun(dir)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		verdicts[rc.Verdict]++
		printRecheck(out, rc)
	}
	switch {
	case len(bad) > 0:
		return &exitError{exitHarness, fmt.Errorf("check: %d of %d run directories unreadable: %w", len(bad), len(dirs), errors.Join(bad...))}
	case verdicts[check.Fail] > 0:
		return &exitError{exitViolation, fmt.Errorf("check: %d of %d runs fail", verdicts[check.Fail], len(dirs))}
	case verdicts[check.Inconclusive] > 0:
		return &exitError{exitInconclusive, fmt.Errorf("check: %d of %d runs inconclusive", verdicts[check.Inconclusive], len(dirs))}
	case verdicts[""] > 0:
		return &exitError{exitHarness, fmt.Errorf("check: %d of %d runs ended in a harness error", verdicts[""], len(dirs))}
	}
	return nil
}

// printRecheck writes one run: the stored and new verdicts, then each
// checker whose status changed.
func printRecheck(w io.Writer, rc *harness.Recheck) {
	stored := "none"
	if rc.Stored != nil {
		stored = verdictWord(rc.Stored.Verdict)
	}
	fmt.Fprintf(w, "%s: stored %s, now %s\n", rc.Dir, stored, verdictWord(rc.Verdict))
	for _, n := range rc.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if rc.Stored == nil && rc.Verdict == check.Fail {
		fmt.Fprintf(w, "  first failure: %s\n", rc.Checks.Error())
	}
	if rc.Stored != nil && len(rc.Changes) == 0 {
		fmt.Fprintln(w, "  no checker changed")
	}
	for _, c := range rc.Changes {
		fmt.Fprintf(w, "  %s: %s -> %s", c.Name, statusWord(c.Was), statusWord(c.Now))
		if c.Now != "" {
			fmt.Fprintf(w, " (%s)", c.Summary)
		}
		fmt.Fprintln(w)
	}
}

// verdictWord is a run verdict in capitals; "" is a harness error.
func verdictWord(v check.Status) string {
	if v == "" {
		return "ERROR"
	}
	return strings.ToUpper(string(v))
}

// statusWord is a check status; "" means the checker was absent.
func statusWord(s check.Status) string {
	if s == "" {
		return "absent"
	}
	return string(s)
}
