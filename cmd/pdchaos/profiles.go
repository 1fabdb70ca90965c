package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pdchaos/pdchaos/contract"
)

// profileFlagHelp is the --profile help, the same on every command.
func profileFlagHelp() string {
	return "bundled engine: switch on an upstream build's default-build races and its wire as one set (" +
		strings.Join(contract.ProfileNames(), ", ") + "); adds to --regression; see 'pdchaos engine --profile list'"
}

// printProfiles lists the profiles for a terminal: wire, build, and each
// regression switched on with the reference's reason.
func printProfiles(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, p := range contract.Profiles() {
		fmt.Fprintf(tw, "%s\twire %s; %s\n", p.Name, p.Wire, p.Build)
		for _, r := range p.On {
			fmt.Fprintf(tw, "\t  on  %s: %s\n", r.Regression, r.Reason)
		}
		for _, r := range p.Off {
			fmt.Fprintf(tw, "\t  off %s: %s\n", r.Regression, r.Reason)
		}
		for _, u := range p.Unmodelled {
			fmt.Fprintf(tw, "\t  not modelled: %s\n", u)
		}
	}
	_ = tw.Flush()
}

// profilesMarkdown is docs/sglang.md's profile table, generated from
// contract.Profiles() so the two cannot drift (TestSGLangProfileTable checks
// it; `go test ./cmd/pdchaos -run TestSGLangProfileTable -update` rewrites it).
func profilesMarkdown() string {
	var b strings.Builder
	for _, p := range contract.Profiles() {
		fmt.Fprintf(&b, "### `--profile %s`\n\nWire `%s`. %s.\n\n", p.Name, p.Wire, p.Build)
		b.WriteString("| regression | | why (reference) |\n|---|---|---|\n")
		for _, r := range p.On {
			fmt.Fprintf(&b, "| `%s` | **on** | %s |\n", r.Regression, r.Reason)
		}
		for _, r := range p.Off {
			fmt.Fprintf(&b, "| `%s` | off | %s |\n", r.Regression, r.Reason)
		}
		if len(p.Unmodelled) > 0 {
			b.WriteString("\nDefault-build races the engine has no regression for (not switched on, not imitated):\n\n")
			for _, u := range p.Unmodelled {
				fmt.Fprintf(&b, "- %s\n", u)
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
