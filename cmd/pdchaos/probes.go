package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	var runs []string
	cmd := &cobra.Command{
		Use:   "probes [NAME...]",
		Short: "List the engine's code probes: name, side, place in the code (file:line) and the branch each marks",
		Long: `List the engine's code probes: name, side, place in the code (file:line)
and the branch each marks. With --runs DIR (repeatable), read every
result.json under the directories instead and print each probe with how
many runs hit it, how often, and which scenarios (with their regressions)
did; probes no run hit are listed last and make the exit code 1.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			probes, err := pickProbes(side, args)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if len(runs) > 0 {
				cov, err := readProbeRuns(runs)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				unhit, err := printProbeCoverage(cmd.OutOrStdout(), probes, cov)
				if err != nil {
					return err
				}
				if unhit > 0 {
					return &exitError{exitViolation, fmt.Errorf("probes: %d of %d probes hit by none of %d runs", unhit, len(probes), cov.runs)}
				}
				return nil
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
	cmd.Flags().StringArrayVar(&runs, "runs", nil, "read the probe hits of every run (result.json) under this directory (repeatable): the coverage table")
	return cmd
}

// probeRuns is the probe hits of a set of runs.
type probeRuns struct {
	runs int
	// byScenario counts runs per scenario label (name, with its
	// regressions in brackets).
	byScenario map[string]int
	// hits[probe][label] is how many runs of label hit probe, and
	// total[probe] all their hits.
	hits  map[string]map[string]int
	total map[string]int64
}

// readProbeRuns reads the probes of every result.json under dirs.
func readProbeRuns(dirs []string) (*probeRuns, error) {
	c := &probeRuns{byScenario: map[string]int{}, hits: map[string]map[string]int{}, total: map[string]int64{}}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("probes --runs: %w", err)
		}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "result.json" {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var r struct {
				Scenario    string           `json:"scenario"`
				Regressions []string         `json:"regressions"`
				Probes      map[string]int64 `json:"probes"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if r.Probes == nil {
				return nil // recorded before probes, or a run that never started the engine
			}
			label := r.Scenario
			if len(r.Regressions) > 0 {
				label += " [" + strings.Join(r.Regressions, ",") + "]"
			}
			c.runs++
			c.byScenario[label]++
			for p, n := range r.Probes {
				if n <= 0 {
					continue
				}
				if c.hits[p] == nil {
					c.hits[p] = map[string]int{}
				}
				c.hits[p][label]++
				c.total[p] += n
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("probes --runs %s: %w", dir, err)
		}
	}
	if c.runs == 0 {
		return nil, fmt.Errorf("probes --runs %s: no result.json with probe hits", strings.Join(dirs, " "))
	}
	return c, nil
}

// printProbeCoverage writes one row per probe hit (runs hitting it, hits,
// and the scenarios that did, most runs first) and then the unhit ones;
// it returns how many were unhit.
func printProbeCoverage(out io.Writer, probes []contract.Probe, c *probeRuns) (int, error) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "PROBE\tPLACE\tRUNS\tHITS\tHIT BY (runs that hit it / runs of the scenario)\n")
	var unhit, never []contract.Probe
	for _, p := range probes {
		by := c.hits[p.Name]
		if len(by) == 0 && p.Never {
			never = append(never, p)
			continue
		}
		if len(by) == 0 {
			unhit = append(unhit, p)
			continue
		}
		labels := slices.Collect(maps.Keys(by))
		slices.SortFunc(labels, func(a, b string) int {
			if d := by[b] - by[a]; d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		var parts []string
		runs := 0
		for _, l := range labels {
			runs += by[l]
			parts = append(parts, fmt.Sprintf("%s %d/%d", l, by[l], c.byScenario[l]))
		}
		const shown = 4
		if len(parts) > shown {
			parts = append(parts[:shown], fmt.Sprintf("+%d more", len(parts)-shown))
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", p.Name, firstSite(p), runs, c.total[p.Name], strings.Join(parts, ", "))
	}
	for _, p := range never {
		fmt.Fprintf(w, "%s\t%s\t0\t0\tnever (asserted: a hit fails %s)\n", p.Name, firstSite(p), contract.CheckUnreachableBranches)
	}
	for _, p := range unhit {
		fmt.Fprintf(w, "%s\t%s\t0\t0\tUNHIT\n", p.Name, firstSite(p))
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("print probe coverage: %w", err)
	}
	fmt.Fprintf(out, "%d probes, %d hit, %d unhit, %d never to be hit (asserted), over %d runs of %d scenarios\n",
		len(probes), len(probes)-len(unhit)-len(never), len(unhit), len(never), c.runs, len(c.byScenario))
	return len(unhit), nil
}

func firstSite(p contract.Probe) string {
	if len(p.Sites) == 0 {
		return ""
	}
	return p.Sites[0]
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
		if p.Never {
			doc += " [never on the fixed engine: a hit fails " + contract.CheckUnreachableBranches + "]"
		}
		if p.Records != "" {
			doc += " [records a " + p.Records + " room event per hit: " + contract.CheckBranchesRecorded + "]"
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
