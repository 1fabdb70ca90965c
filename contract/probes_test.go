package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestProbeTable checks the table itself: IDs in order, names unique,
// kebab-case and prefixed by their side, a doc on each, and regressions
// that exist.
func TestProbeTable(t *testing.T) {
	t.Parallel()
	kebab := regexp.MustCompile(`^(prefill|decode|router)/[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	table := probeTable()
	if len(table) != NumProbes {
		t.Fatalf("table has %d probes, NumProbes is %d", len(table), NumProbes)
	}
	var regs []string
	for _, r := range Catalogue() {
		regs = append(regs, r.Name)
	}
	for i, p := range table {
		if int(p.ID) != i {
			t.Errorf("probe %s at index %d has ID %d", p.Name, i, p.ID)
		}
		if !kebab.MatchString(p.Name) || !strings.HasPrefix(p.Name, p.Side+"/") {
			t.Errorf("probe %q: want side/kebab-case with side prefill, decode or router", p.Name)
		}
		if seen[p.Name] {
			t.Errorf("probe %s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Doc == "" {
			t.Errorf("probe %s has no doc", p.Name)
		}
		if p.Regression != "" && !slices.Contains(regs, p.Regression) {
			t.Errorf("probe %s names unknown regression %q", p.Name, p.Regression)
		}
		if p.Never && p.Regression != "" {
			t.Errorf("probe %s is both Never and regression %s's branch: one or the other", p.Name, p.Regression)
		}
		if p.ID.String() != p.Name {
			t.Errorf("ProbeID(%d).String() = %q, want %q", p.ID, p.ID.String(), p.Name)
		}
		if p.Records == RoomEventStatus || p.Records == RoomEventClear {
			t.Errorf("probe %s records %q: every write of the room's status does, not only its branch", p.Name, p.Records)
		}
	}
}

// TestBackstopProbesRecordTheirEvent: a backstop that writes its own
// event kind (not a status) has its probe record that kind, so
// branches-recorded holds the backstop's events to its firings.
func TestBackstopProbesRecordTheirEvent(t *testing.T) {
	t.Parallel()
	for _, b := range Backstops() {
		p := probeTable()[b.Probe]
		if b.Kind != RoomEventStatus && p.Records != b.Kind {
			t.Errorf("backstop %s writes %q events; its probe %s records %q", b.Name, b.Kind, p.Name, p.Records)
		}
	}
}

// probeConsts maps each ProbeID constant's identifier to its value, read
// from this package's source (the iota block of probes.go).
func probeConsts(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "probes.go", nil, 0)
	if err != nil {
		t.Fatalf("parse probes.go: %v", err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
			continue
		}
		if first := g.Specs[0].(*ast.ValueSpec); len(first.Names) == 0 || first.Names[0].Name != "ProbePrefillAbortKillsLoop" {
			continue
		}
		for i, s := range g.Specs {
			out[s.(*ast.ValueSpec).Names[0].Name] = i
		}
	}
	if len(out) == 0 {
		t.Fatal("no ProbeID constants found in probes.go")
	}
	return out
}

// engineProbeSites finds every probe call site in the engine's product
// code: a call of a method named Hit or hit whose arguments name
// contract.ProbeX constants. It returns probe name → "path:line" and the
// constants used that no table entry has.
func engineProbeSites(t *testing.T) (map[string][]string, []string) {
	t.Helper()
	consts := probeConsts(t)
	table := probeTable()
	root := ".."
	sites := map[string][]string{}
	var unknown []string
	for _, dir := range []string{"engine", "engine/core"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatalf("list %s: %v", dir, err)
		}
		sort.Strings(files)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			rel := filepath.ToSlash(filepath.Join(dir, filepath.Base(path)))
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fun, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (fun.Sel.Name != "Hit" && fun.Sel.Name != "hit") {
					return true
				}
				for _, a := range call.Args {
					sel, ok := a.(*ast.SelectorExpr)
					if !ok || !strings.HasPrefix(sel.Sel.Name, "Probe") {
						continue
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "contract" {
						continue
					}
					at := fmt.Sprintf("%s:%d", rel, fset.Position(call.Pos()).Line)
					id, ok := consts[sel.Sel.Name]
					if !ok || id >= len(table) {
						unknown = append(unknown, sel.Sel.Name+" at "+at)
						continue
					}
					sites[table[id].Name] = append(sites[table[id].Name], at)
				}
				return true
			})
		}
	}
	return sites, unknown
}

// TestProbeSites checks that every probe in the table has a call site in
// the engine, that every call site names a probe of the table, and that the
// embedded site list (what `pdchaos probes` prints, also outside the
// repository) matches the source. After moving engine code, rewrite it:
//
//	PDCHAOS_UPDATE_PROBES=1 go test ./contract/ -run TestProbeSites
func TestProbeSites(t *testing.T) {
	t.Parallel()
	sites, unknown := engineProbeSites(t)
	for _, u := range unknown {
		t.Errorf("engine call site names a probe missing from the table: %s", u)
	}
	var b strings.Builder
	b.WriteString("# Code probe call sites: probe path:line. Kept true by TestProbeSites;\n")
	b.WriteString("# rewrite with PDCHAOS_UPDATE_PROBES=1 go test ./contract/ -run TestProbeSites\n")
	for _, p := range probeTable() {
		if len(sites[p.Name]) == 0 {
			t.Errorf("probe %s has no call site in the engine (a Hit(contract.%s) call)", p.Name, constName(t, p.ID))
		}
		for _, s := range sites[p.Name] {
			fmt.Fprintf(&b, "%s %s\n", p.Name, s)
		}
	}
	want := b.String()
	if os.Getenv("PDCHAOS_UPDATE_PROBES") != "" {
		if err := os.WriteFile("probe_sites.txt", []byte(want), 0o644); err != nil {
			t.Fatalf("write probe_sites.txt: %v", err)
		}
		return
	}
	if probeSites != want {
		got := ProbeSites()
		for _, p := range probeTable() {
			if !slices.Equal(got[p.Name], sites[p.Name]) {
				t.Errorf("probe %s: probe_sites.txt says %v, the source has %v", p.Name, got[p.Name], sites[p.Name])
			}
		}
		t.Errorf("probe_sites.txt is stale; run PDCHAOS_UPDATE_PROBES=1 go test ./contract/ -run TestProbeSites")
	}
}

func constName(t *testing.T, id ProbeID) string {
	for name, v := range probeConsts(t) {
		if v == int(id) {
			return name
		}
	}
	return "?"
}

// TestUnhitProbes: a probe counts as hit when any run hit it.
func TestUnhitProbes(t *testing.T) {
	t.Parallel()
	var all []Probe
	never := 0
	for _, p := range probeTable() {
		if p.Never {
			never++ // asserted, never asked for
			continue
		}
		all = append(all, p)
	}
	if never == 0 {
		t.Fatal("no Never probe in the table: the exclusion below tests nothing")
	}
	runs := []map[string]int64{{}, {}}
	for i, p := range all {
		if i > 0 { // every probe but the first, spread over two runs, one with a zero
			runs[i%2][p.Name] = int64(i)
		}
	}
	runs[0][all[1].Name] = 0
	runs[1][all[1].Name] = 2
	got := UnhitProbes(runs...)
	if len(got) != 1 || got[0].Name != all[0].Name {
		t.Fatalf("UnhitProbes = %v, want only %s", got, all[0].Name)
	}
	if got := UnhitProbes(); len(got) != NumProbes-never {
		t.Errorf("no runs: %d unhit, want all %d but the %d Never probes", len(got), NumProbes-never, never)
	}
}
