package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/faults/catalog"
)

// newFaultsListCmd prints the fault catalogue: every kind a scenario's
// faults section may name, its layer and its parameters.
func newFaultsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [KIND...]",
		Short: "List the scenario fault kinds with their layer, parameters, defaults and bounds",
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds := catalog.Kinds()
			if len(args) > 0 {
				var pick []catalog.Kind
				for _, a := range args {
					k, ok := catalog.Lookup(a)
					if !ok {
						return &exitError{exitHarness, fmt.Errorf("faults list: %q is not a fault kind (valid: %s)", a, strings.Join(catalog.Names(), ", "))}
					}
					pick = append(pick, k)
				}
				kinds = pick
			}
			return printKinds(cmd.OutOrStdout(), kinds)
		},
	}
}

// printKinds writes one block per kind: name, layer and doc, then a row per
// parameter (name, Go type, required or default and bounds, doc), then an
// example entry.
func printKinds(out io.Writer, kinds []catalog.Kind) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "# Each entry of a scenario's faults list: kind, at, for, every, count, plus the kind's parameters.")
	for _, k := range kinds {
		fmt.Fprintf(w, "\n%s [%s]: %s\n", k.Name, k.Layer, k.Doc)
		for _, p := range k.Params {
			req := "required"
			if !p.Required {
				req = "default " + showDefault(p)
			}
			if b := p.Bounds(); b != "" {
				req += "; " + b
			}
			fmt.Fprintf(w, "    %s\t%s\t%s\t%s\n", p.Name, p.Type, req, p.Doc)
		}
		if len(k.Params) == 0 {
			fmt.Fprintln(w, "    (no parameters)")
		}
		fmt.Fprintf(w, "    e.g. %s\n", example(k))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("print fault kinds: %w", err)
	}
	return nil
}

func showDefault(p catalog.Param) string {
	if p.Default != "" {
		return p.Default
	}
	switch p.Type {
	case catalog.TypeDuration:
		return "0s"
	case catalog.TypeInt:
		return "0"
	case catalog.TypeBool:
		return "false"
	case catalog.TypeStrings:
		return "[]"
	}
	return `""`
}

// example renders a kind's example as a one-line YAML flow mapping.
func example(k catalog.Kind) string {
	parts := []string{"kind: " + k.Name}
	names := make([]string, 0, len(k.Example))
	for n := range k.Example {
		names = append(names, n)
	}
	sort.SliceStable(names, func(i, j int) bool { return paramIndex(k, names[i]) < paramIndex(k, names[j]) })
	for _, n := range names {
		v := k.Example[n]
		if l, ok := v.([]any); ok {
			s := make([]string, len(l))
			for i, e := range l {
				s[i] = fmt.Sprint(e)
			}
			v = "[" + strings.Join(s, ", ") + "]"
		}
		parts = append(parts, fmt.Sprintf("%s: %v", n, v))
	}
	return "{" + strings.Join(parts, ", ") + ", at: 1s, for: 2s}"
}

func paramIndex(k catalog.Kind, name string) int {
	for i, p := range k.Params {
		if p.Name == name {
			return i
		}
	}
	return len(k.Params)
}
