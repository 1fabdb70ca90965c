package testkit_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/pdchaos/pdchaos/"

// TestOnlyTestsImportTestkit enforces what doc.go states: no non-test file
// outside internal/testkit imports it, and testkit itself (not testcluster)
// does not import the engine, zmtp or anything above them.
func TestOnlyTestsImportTestkit(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(p, module+"internal/testkit") && !strings.HasPrefix(dir, "internal/testkit"):
				t.Errorf("%s: non-test code imports %s", rel, p)
			case dir == "internal/testkit" && isAbove(p):
				t.Errorf("%s: testkit imports %s (an import cycle for engine's and zmtp's internal tests)", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
}

// isAbove reports whether p is a package of this module that testkit must
// not import.
func isAbove(p string) bool {
	for _, pkg := range []string{"engine", "zmtp", "faults", "agents", "harness", "suites", "cmd", "reports"} {
		if p == module+pkg || strings.HasPrefix(p, module+pkg+"/") {
			return p != module+"engine/model" // a leaf: the expected answers

		}
	}
	return strings.Contains(p, "ginkgo") || strings.Contains(p, "gomega")
}
