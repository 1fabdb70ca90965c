package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/contract"
)

// newProbesCmd lists the engine's code probes: every failure-handling
// branch with its name, side, place in the source and what it handles. The
// places come from the site list built into the binary (contract's
// probe_sites.txt, which TestProbeSites keeps equal to the engine source),
// so the listing works outside the repository too.
func newProbesCmd() *cobra.Command {
	var asJSON bool
	var side string
	cmd := &cobra.Command{
		Use:   "probes [NAME...]",
		Short: "List the engine's code probes: name, side, place in the code (file:line) and the branch each marks",
		RunE: func(cmd *cobra.Command, args []string) error {
			probes, err := pickProbes(side, args)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(probes); err != nil {
					return fmt.Errorf("probes: write json: %w", err)
				}
				return nil
			}
			return printProbes(cmd.OutOrStdout(), probes)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, side, doc, regression, sites}")
	cmd.Flags().StringVar(&side, "side", "", "only the probes of prefill, decode or router")
	return cmd
}

// pickProbes filters the table by side and by name.
func pickProbes(side string, names []string) ([]contract.Probe, error) {
	switch side {
	case "", contract.SidePrefill, contract.SideDecode, contract.SideRouter:
	default:
		return nil, fmt.Errorf("probes: --side %q: want prefill, decode or router", side)
	}
	all := contract.Probes()
	if len(names) > 0 {
		var pick []contract.Probe
		for _, n := range names {
			p, ok := contract.LookupProbe(n)
			if !ok {
				return nil, fmt.Errorf("probes: %q is not a probe (pdchaos probes lists them)", n)
			}
			pick = append(pick, p)
		}
		all = pick
	}
	var out []contract.Probe
	for _, p := range all {
		if side == "" || p.Side == side {
			out = append(out, p)
		}
	}
	return out, nil
}

// printProbes writes one row per probe: name, side, first site, doc (and
// the regression the branch belongs to, if any), then a row per further
// site.
func printProbes(out io.Writer, probes []contract.Probe) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROBE\tSIDE\tPLACE\tBRANCH")
	for _, p := range probes {
		doc := p.Doc
		if p.Regression != "" {
			doc += " [only with regression " + p.Regression + "]"
		}
		first := ""
		if len(p.Sites) > 0 {
			first = p.Sites[0]
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.Side, first, doc)
		for _, s := range p.Sites[min(1, len(p.Sites)):] {
			fmt.Fprintf(w, "\t\t%s\t\n", s)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("print probes: %w", err)
	}
	return nil
}
