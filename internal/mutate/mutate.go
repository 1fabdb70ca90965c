package mutate

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind is how a mutant breaks its probe's branch.
type Kind string

const (
	// Skip disables (wraps in `if false`) the statements that follow the
	// probe's Hit in its block (the handling), keeping a final return, break, continue or goto so
	// the branch still leaves the way it did: the branch is taken, counted
	// and does nothing.
	Skip Kind = "skip"
	// WrongExit disables everything after the Hit including the block's
	// final return, break, continue or goto, so control falls through to
	// the code after the branch: the normal path runs on the failure.
	WrongExit Kind = "wrong-exit"
)

// SitesFile is where a module lists its probes' call sites, relative to
// its root: one "probe path:line" a line, kept true by contract's
// TestProbeSites.
const SitesFile = "contract/probe_sites.txt"

// Mutant is one broken branch: a probe's call site and the kind of
// breakage.
type Mutant struct {
	// Probe is the probe's name (e.g. "decode/ack-timeout-free").
	Probe string `json:"probe"`
	// File is the call site's path relative to the module root.
	File string `json:"file"`
	// Line is the Hit's line in File.
	Line int  `json:"line"`
	Kind Kind `json:"kind"`
	// Also names the other probes the same Hit counts (the status table
	// counts one per side); the mutant is reached when any of them is hit.
	Also []string `json:"also,omitempty"`
	// Dropped is the source of each statement the mutant removes, one
	// line each, so a reader can judge what the branch loses.
	Dropped []string `json:"dropped"`
}

// ID names the mutant uniquely: probe@file:line/kind.
func (m Mutant) ID() string { return fmt.Sprintf("%s@%s:%d/%s", m.Probe, m.File, m.Line, m.Kind) }

// Place is the mutant's file:line.
func (m Mutant) Place() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

// Site is one probe call site read from SitesFile.
type Site struct {
	Probe string
	File  string
	Line  int
}

// ReadSites reads root's SitesFile.
func ReadSites(root string) ([]Site, error) {
	b, err := os.ReadFile(filepath.Join(root, SitesFile))
	if err != nil {
		return nil, fmt.Errorf("read probe sites: %w", err)
	}
	var out []Site
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		probe, place, ok := strings.Cut(line, " ")
		file, ln, ok2 := strings.Cut(place, ":")
		l, err := strconv.Atoi(ln)
		if !ok || !ok2 || err != nil {
			return nil, fmt.Errorf("read probe sites: %s line %d: want \"probe path:line\", got %q", SitesFile, n, line)
		}
		out = append(out, Site{Probe: probe, File: file, Line: l})
	}
	return out, sc.Err()
}

// List returns every mutant of every probe site under root, in the order
// of SitesFile, and the sites that have none (a Hit that is the last
// statement of its block only observes: there is no handling after it to
// break).
func List(root string) (mutants []Mutant, observeOnly []Site, err error) {
	sites, err := ReadSites(root)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, s := range sites {
		place := fmt.Sprintf("%s:%d", s.File, s.Line)
		if seen[place] {
			// One Hit counting a probe per side (the status table): one
			// set of mutants, reached when either probe is.
			for j := range mutants {
				if mutants[j].Place() == place {
					mutants[j].Also = append(mutants[j].Also, s.Probe)
				}
			}
			continue
		}
		seen[place] = true
		ms, err := siteMutants(root, s)
		if err != nil {
			return nil, nil, err
		}
		if len(ms) == 0 {
			observeOnly = append(observeOnly, s)
		}
		mutants = append(mutants, ms...)
	}
	return mutants, observeOnly, nil
}

// located is a Hit statement found in a parsed file: the statement list
// that holds it, its index there, and whether that list is a function's
// body (where dropping the final return would not compile, or would
// change nothing).
type located struct {
	list   *[]ast.Stmt
	index  int
	inFunc bool
}

func siteMutants(root string, s Site) ([]Mutant, error) {
	fset, f, err := parse(root, s.File)
	if err != nil {
		return nil, err
	}
	loc, err := find(fset, f, s)
	if err != nil {
		return nil, err
	}
	tail := (*loc.list)[loc.index+1:]
	term := len(tail) > 0 && terminates(tail[len(tail)-1])
	var out []Mutant
	if n := len(tail); n > 0 && (!term || n > 1) {
		keep := tail
		if term {
			keep = tail[:n-1]
		}
		out = append(out, Mutant{Probe: s.Probe, File: s.File, Line: s.Line, Kind: Skip, Dropped: sources(fset, keep)})
	}
	if term && !loc.inFunc {
		out = append(out, Mutant{Probe: s.Probe, File: s.File, Line: s.Line, Kind: WrongExit, Dropped: sources(fset, tail)})
	}
	return out, nil
}

// Apply writes m into the module copy at dir: it rewrites m.File there
// with the branch broken. The file must be the one List read (same line).
func Apply(dir string, m Mutant) error {
	fset, f, err := parse(dir, m.File)
	if err != nil {
		return err
	}
	loc, err := find(fset, f, Site{Probe: m.Probe, File: m.File, Line: m.Line})
	if err != nil {
		return err
	}
	list := *loc.list
	tail := list[loc.index+1:]
	switch m.Kind {
	case Skip:
		if len(tail) == 0 {
			return fmt.Errorf("apply %s: nothing follows the Hit", m.ID())
		}
		kept := list[: loc.index+1 : loc.index+1]
		drop, last := tail, tail[len(tail)-1]
		if terminates(last) {
			drop = tail[:len(tail)-1]
		}
		kept = append(kept, deadCode(drop))
		if terminates(last) {
			kept = append(kept, last)
		}
		*loc.list = kept
	case WrongExit:
		if len(tail) == 0 || !terminates(tail[len(tail)-1]) || loc.inFunc {
			return fmt.Errorf("apply %s: the Hit's block does not end in an exit to drop", m.ID())
		}
		*loc.list = append(list[:loc.index+1:loc.index+1], deadCode(tail))
	default:
		return fmt.Errorf("apply %s: unknown kind %q", m.ID(), m.Kind)
	}
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return fmt.Errorf("apply %s: print %s: %w", m.ID(), m.File, err)
	}
	if err := os.WriteFile(filepath.Join(dir, m.File), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("apply %s: %w", m.ID(), err)
	}
	return nil
}

// deadCode wraps the dropped statements in `if false { ... }` rather than
// deleting them: every variable the handling used stays used, so the
// mutant compiles where a deletion would leave "declared and not used".
func deadCode(stmts []ast.Stmt) ast.Stmt {
	return &ast.IfStmt{Cond: ast.NewIdent("false"), Body: &ast.BlockStmt{List: stmts}}
}

func parse(root, file string) (*token.FileSet, *ast.File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ParseComments)
	if err != nil {
		return nil, nil, fmt.Errorf("parse probe site file: %w", err)
	}
	return fset, f, nil
}

// find locates the statement `x.Hit(contract.ProbeY)` on s.Line: the call
// site the sites file names.
func find(fset *token.FileSet, f *ast.File, s Site) (located, error) {
	var found *located
	inspectLists(f, func(list *[]ast.Stmt, inFunc bool) {
		for i, st := range *list {
			if found == nil && isHit(st) && fset.Position(st.Pos()).Line == s.Line {
				found = &located{list: list, index: i, inFunc: inFunc}
			}
		}
	})
	if found == nil {
		return located{}, fmt.Errorf("find probe %s: no Hit statement at %s:%d (is %s stale?)", s.Probe, s.File, s.Line, SitesFile)
	}
	return *found, nil
}

// inspectLists calls fn with every statement list in f: block bodies and
// case and select clause bodies. inFunc is true for a function's own body.
func inspectLists(f *ast.File, fn func(list *[]ast.Stmt, inFunc bool)) {
	bodies := map[*ast.BlockStmt]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				bodies[n.Body] = true
			}
		case *ast.FuncLit:
			bodies[n.Body] = true
		case *ast.BlockStmt:
			fn(&n.List, bodies[n])
		case *ast.CaseClause:
			fn(&n.Body, false)
		case *ast.CommClause:
			fn(&n.Body, false)
		}
		return true
	})
}

// isHit reports whether st is a probe hit: a call of a method named Hit
// (or the status table's hit, which counts one probe per side) whose
// arguments are all contract.ProbeSomething.
func isHit(st ast.Stmt) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	if fun, ok := call.Fun.(*ast.SelectorExpr); !ok || (fun.Sel.Name != "Hit" && fun.Sel.Name != "hit") {
		return false
	}
	for _, a := range call.Args {
		arg, ok := a.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if x, ok := arg.X.(*ast.Ident); !ok || x.Name != "contract" || !strings.HasPrefix(arg.Sel.Name, "Probe") {
			return false
		}
	}
	return true
}

// terminates reports whether st leaves its block: return, break,
// continue or goto.
func terminates(st ast.Stmt) bool {
	switch st.(type) {
	case *ast.ReturnStmt, *ast.BranchStmt:
		return true
	}
	return false
}

func sources(fset *token.FileSet, stmts []ast.Stmt) []string {
	out := make([]string, 0, len(stmts))
	for _, st := range stmts {
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, st); err != nil {
			out = append(out, fmt.Sprintf("<unprintable: %v>", err))
			continue
		}
		s := strings.Join(strings.Fields(buf.String()), " ")
		if len(s) > 100 {
			s = s[:97] + "..."
		}
		out = append(out, s)
	}
	return out
}
