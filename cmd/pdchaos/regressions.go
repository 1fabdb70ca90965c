package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pdchaos/pdchaos/contract"
)

// printRegressions lists the regression catalogue for a terminal: what goes
// wrong, the upstream symptom, and the scenario and checker that catch it.
func printRegressions(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range contract.Catalogue() {
		fmt.Fprintf(tw, "%s\t%s\n", r.Name, r.Summary)
		fmt.Fprintf(tw, "\t  symptom: %s\n", r.Symptom)
		fmt.Fprintf(tw, "\t  caught by: pdchaos run %s --regression %s (%s)\n", r.Caught.Scenario, r.Name, r.Caught.Checker)
		for _, a := range r.Also {
			note := ""
			if a.Unreliable != "" {
				note = " not asserted: " + a.Unreliable
			}
			fmt.Fprintf(tw, "\t  also caught by: pdchaos run %s --regression %s (%s)%s\n", a.Scenario, r.Name, a.Checker, note)
		}
	}
	_ = tw.Flush()
}

// regressionsMarkdown is the README's regression table, generated from the
// catalogue so the two cannot drift (TestREADMERegressionTable checks it;
// `go test ./cmd/pdchaos -run TestREADMERegressionTable -update` rewrites it).
func regressionsMarkdown() string {
	var b strings.Builder
	b.WriteString("| name | what goes wrong (upstream symptom) | caught by (checker) |\n|---|---|---|\n")
	for _, r := range contract.Catalogue() {
		fmt.Fprintf(&b, "| `%s` | %s — %s | `%s` (%s) |\n", r.Name, r.Summary, r.Symptom, r.Caught.Scenario, r.Caught.Checker)
	}
	return b.String()
}
