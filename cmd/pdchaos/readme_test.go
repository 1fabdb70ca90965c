package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite generated sections of README.md")

const (
	regBegin = "<!-- regressions: generated from contract.Catalogue() by `go test ./cmd/pdchaos -run TestREADMERegressionTable -update` -->\n"
	regEnd   = "<!-- end regressions -->\n"
)

// TestREADMERegressionTable checks the README's regression table against
// the catalogue, so a regression added, renamed or re-targeted without the
// README following fails here.
func TestREADMERegressionTable(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, regBegin), strings.Index(s, regEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md: no regression table between the markers %q and %q", strings.TrimSpace(regBegin), strings.TrimSpace(regEnd))
	}
	got, want := s[i+len(regBegin):j], regressionsMarkdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(regBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := range max(len(gl), len(wl)) {
		var g, w string
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Errorf("README.md regression table line %d:\n got: %s\nwant: %s", k+1, g, w)
		}
	}
	t.Log("run: go test ./cmd/pdchaos -run TestREADMERegressionTable -update")
}
