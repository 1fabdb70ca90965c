package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/suites/scenarios"
)

// regressionConsts returns the names and values of the constants declared
// in the same block as AbortBeforeStatus: the regression names.
func regressionConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "regressions.go", nil, 0)
	if err != nil {
		t.Fatalf("parse regressions.go: %v", err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		out := map[string]string{}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if lit, ok := v.Values[i].(*ast.BasicLit); ok {
					out[n.Name] = strings.Trim(lit.Value, `"`)
				}
			}
		}
		if _, ok := out["AbortBeforeStatus"]; ok {
			return out
		}
	}
	t.Fatal("no const block with AbortBeforeStatus in regressions.go")
	return nil
}

// TestCatalogueComplete: every regression name has a catalogue entry, and
// every entry names an existing preset and checker and is documented. A
// regression added without its table entry fails here, naming it.
func TestCatalogueComplete(t *testing.T) {
	presets, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range presets {
		presets[i] = strings.TrimSuffix(presets[i], ".yaml")
	}
	names := contract.RegressionNames()
	for c, v := range regressionConsts(t) {
		if !slices.Contains(names, v) {
			t.Errorf("regression %s (%q) has no entry in contract.Catalogue()", c, v)
		}
	}
	seen := map[string]bool{}
	for _, r := range contract.Catalogue() {
		if seen[r.Name] {
			t.Errorf("regression %s listed twice", r.Name)
		}
		seen[r.Name] = true
		if r.Summary == "" || r.Symptom == "" {
			t.Errorf("regression %s: summary and symptom must say what goes wrong", r.Name)
		}
		if !slices.Contains(presets, r.Caught.Scenario) {
			t.Errorf("regression %s: catching scenario %q is not a preset (presets: %v)", r.Name, r.Caught.Scenario, presets)
		}
		if !slices.Contains(contract.CheckNames(), r.Caught.Checker) {
			t.Errorf("regression %s: checker %q is not one of %v", r.Name, r.Caught.Checker, contract.CheckNames())
		}
		if r.Caught.Unreliable != "" {
			t.Errorf("regression %s: its catalogue catch is marked unreliable (%s); pick a catch the gate can assert", r.Name, r.Caught.Unreliable)
		}
		pairs := map[contract.Catch]bool{{Scenario: r.Caught.Scenario, Checker: r.Caught.Checker}: true}
		for _, a := range r.Also {
			if !slices.Contains(presets, a.Scenario) || !slices.Contains(contract.CheckNames(), a.Checker) {
				t.Errorf("regression %s: extra catch %s (%s) names no preset or no checker", r.Name, a.Scenario, a.Checker)
			}
			if k := (contract.Catch{Scenario: a.Scenario, Checker: a.Checker}); pairs[k] {
				t.Errorf("regression %s: catch %s (%s) listed twice", r.Name, a.Scenario, a.Checker)
			} else {
				pairs[k] = true
			}
		}
	}
}

// TestEveryRegressionIsWired: the engine consults every regression in the
// catalogue (an entry the engine never switches on would be caught by
// nothing and pass by accident), and consults no name outside it.
func TestEveryRegressionIsWired(t *testing.T) {
	consts := regressionConsts(t)
	used := map[string]bool{}
	re := regexp.MustCompile(`contract\.(\w+)`)
	err := filepath.WalkDir("../engine", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if _, ok := consts[m[1]]; ok {
				used[consts[m[1]]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range contract.RegressionNames() {
		if !used[n] {
			t.Errorf("regression %s is in the catalogue but no engine code switches it on", n)
		}
	}
}

func TestParseRegressions(t *testing.T) {
	r, err := contract.ParseRegressions([]string{" decode-abort-leak ", "", contract.RankDesync})
	if err != nil || !r.On(contract.DecodeAbortLeak) || !r.On(contract.RankDesync) || len(r) != 2 {
		t.Fatalf("ParseRegressions = %v, %v", r, err)
	}
	if got := r.List(); !slices.Equal(got, []string{contract.DecodeAbortLeak, contract.RankDesync}) {
		t.Fatalf("List = %v, want catalogue order", got)
	}
	if _, err := contract.ParseRegressions([]string{"decode-abort-leek"}); err == nil || !strings.Contains(err.Error(), contract.DecodeAbortLeak) {
		t.Fatalf("unknown name: err %v should list the valid names", err)
	}
}
