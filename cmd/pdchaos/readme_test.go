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
	checkGenerated(t, "README.md", regBegin, regEnd, regressionsMarkdown(), "regression table", "TestREADMERegressionTable")
}

// checkGenerated compares the section of the repository file path between
// the begin and end markers with want, naming each differing line; with
// -update it rewrites the section instead. Every generated table in the
// docs is checked this way, so none drifts from the table it comes from.
func checkGenerated(t *testing.T, path, begin, end, want, what, test string) {
	t.Helper()
	full := "../../" + path
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %s between the markers %q and %q", path, what, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	got := s[i+len(begin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(full, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
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
			t.Errorf("%s %s line %d:\n got: %s\nwant: %s", path, what, k+1, g, w)
		}
	}
	t.Logf("run: go test ./cmd/pdchaos -run %s -update", test)
}
