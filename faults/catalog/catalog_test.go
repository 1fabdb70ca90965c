package catalog

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
)

// faultTypes finds every exported type in faults/... (tests and internal
// packages aside) that has an Inject method, as "pkg.Type".
func faultTypes(t *testing.T) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "internal" || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Inject" || len(fn.Recv.List) != 1 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
				out = append(out, f.Name.Name+"."+id.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("parse faults packages: %v", err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func testEnv(t *testing.T) Env {
	t.Helper()
	n := network.New()
	t.Cleanup(func() { _ = n.Close(t.Context()) })
	return Env{Net: n, Rand: rand.New(rand.NewPCG(1, 2))}
}

// TestEveryFaultTypeHasAKind: each fault type the code has is built by some
// catalogue entry, so it is usable from YAML.
func TestEveryFaultTypeHasAKind(t *testing.T) {
	types := faultTypes(t)
	if len(types) < 17 {
		t.Fatalf("found only %d fault types (%v): is the parser looking in the right place?", len(types), types)
	}
	env := testEnv(t)
	built := map[string][]string{}
	for _, k := range Kinds() {
		f, err := k.New(k.Example, env)
		if err != nil {
			t.Errorf("kind %s: example does not build: %v", k.Name, err)
			continue
		}
		if f.Layer() != k.Layer {
			t.Errorf("kind %s: layer %s, fault %s says %s", k.Name, k.Layer, f.Name(), f.Layer())
		}
		typ := strings.TrimPrefix(reflect.TypeOf(f).String(), "*")
		built[typ] = append(built[typ], k.Name)
	}
	for _, typ := range types {
		if len(built[typ]) == 0 {
			t.Errorf("fault type %s has no catalogue kind that constructs it: add a row to Kinds", typ)
		}
	}
	t.Logf("fault types %v, built by %v", types, built)
}

// TestTableWellFormed: unique names, documented parameters, and defaults,
// bounds and examples that parse.
func TestTableWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Name] || k.Name == "" {
			t.Errorf("kind %q empty or listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Doc == "" || k.Build == nil || k.Layer == "" {
			t.Errorf("kind %s: needs Doc, Layer and Build", k.Name)
		}
		params := map[string]bool{}
		for _, p := range k.Params {
			if params[p.Name] {
				t.Errorf("kind %s: parameter %s twice", k.Name, p.Name)
			}
			params[p.Name] = true
			if slices.Contains([]string{"kind", "at", "for", "every", "count"}, p.Name) {
				t.Errorf("kind %s: parameter %s clashes with a schedule key", k.Name, p.Name)
			}
			if p.Doc == "" {
				t.Errorf("kind %s: parameter %s has no doc", k.Name, p.Name)
			}
			if p.Required && p.Default != "" {
				t.Errorf("kind %s: parameter %s is required and has default %q", k.Name, p.Name, p.Default)
			}
			if _, err := p.defaultValue(); err != nil {
				t.Errorf("kind %s: %v", k.Name, err)
			}
			if p.Min != "" || p.Max != "" {
				if _, _, _, err := p.numbers(mustDefault(t, p)); err != nil {
					t.Errorf("kind %s: %v", k.Name, err)
				}
			}
			if len(p.Enum) > 0 && p.Type != TypeString && p.Type != TypeStrings {
				t.Errorf("kind %s: parameter %s of type %s has an enum", k.Name, p.Name, p.Type)
			}
		}
		if _, err := k.Parse(k.Example); err != nil {
			t.Errorf("kind %s: example: %v", k.Name, err)
		}
	}
	if !slices.IsSorted(Names()) || len(Names()) != len(Kinds()) {
		t.Errorf("Names %v", Names())
	}
}

func mustDefault(t *testing.T, p Param) any {
	t.Helper()
	v, err := p.defaultValue()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// badValues are values of the wrong type or out of bounds for p.
func badValues(p Param) []any {
	var out []any
	switch p.Type {
	case TypeDuration:
		out = append(out, "five", 5, true)
	case TypeInt:
		out = append(out, "abc", 1.5, true)
	case TypeBool:
		out = append(out, "yes", 1)
	case TypeString:
		out = append(out, 5, "")
		if len(p.Enum) > 0 {
			out = append(out, "nope")
		}
	case TypeStrings:
		out = append(out, "x", []any{5})
		if len(p.Enum) > 0 {
			out = append(out, []any{"nope"})
		}
	}
	if p.Min != "" {
		switch p.Type {
		case TypeDuration:
			d, _ := time.ParseDuration(p.Min)
			if !p.MinExclusive {
				d -= time.Nanosecond
			}
			out = append(out, d.String())
		case TypeInt:
			lo := mustAtoi(p.Min)
			if !p.MinExclusive {
				lo--
			}
			out = append(out, lo)
		}
	}
	if p.Max != "" && p.Type == TypeInt {
		out = append(out, mustAtoi(p.Max)+1)
	}
	return out
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestEveryParamValidated: a bad value of any parameter (wrong type, out of
// bounds, not in the enum), a missing required one or an unknown key is an
// error naming the parameter and the kind, and builds nothing.
func TestEveryParamValidated(t *testing.T) {
	t.Parallel()
	env := Env{Rand: rand.New(rand.NewPCG(1, 2))}
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			try := func(field string, raw map[string]any) {
				t.Helper()
				f, err := k.New(raw, env)
				var pe *ParamError
				if !errors.As(err, &pe) {
					t.Errorf("%v: want a ParamError for %s, got fault %v, error %v", raw, field, f, err)
					return
				}
				if pe.Param != field || pe.Kind != k.Name || !strings.Contains(pe.Error(), "field "+field) ||
					!strings.Contains(pe.Error(), "kind "+k.Name) {
					t.Errorf("%v: error %q (param %s) should name field %s and kind %s", raw, pe, pe.Param, field, k.Name)
				}
			}
			for _, p := range k.Params {
				bad := badValues(p)
				if len(bad) == 0 {
					t.Errorf("parameter %s: no bad values to test", p.Name)
				}
				for _, b := range bad {
					raw := withValue(k.Example, p.Name, b)
					try(p.Name, raw)
				}
				if p.Required {
					raw := withValue(k.Example, p.Name, nil)
					delete(raw, p.Name)
					try(p.Name, raw)
				}
			}
			try("no_such_param", withValue(k.Example, "no_such_param", 1))
		})
	}
}

func withValue(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// TestCrossParamRules: rules between parameters name the field.
func TestCrossParamRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, field string
		raw         map[string]any
	}{
		{"delay-messages", "max", map[string]any{"link": "control/0", "min": "2s", "max": "1s"}},
		{"hold-messages", "after_messages", map[string]any{"link": "control/0"}},
	} {
		k, _ := Lookup(tc.kind)
		_, err := k.Parse(tc.raw)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tc.field {
			t.Errorf("%s %v: error %v, want one on field %s", tc.kind, tc.raw, err, tc.field)
		}
	}
}

// TestDefaultsAndInputForms: defaults fill absent parameters; YAML and JSON
// forms of the same value parse alike.
func TestDefaultsAndInputForms(t *testing.T) {
	t.Parallel()
	k, ok := Lookup("pause-transfer-workers")
	if !ok {
		t.Fatal("no pause-transfer-workers")
	}
	f, err := k.New(nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if p := f.(*faults.PauseTransferWorkers); p.Rank != -1 || p.Worker != -1 || p.Role != "prefill" || p.InFlight {
		t.Fatalf("defaults: %+v", p)
	}
	sl, _ := Lookup("slicer")
	for _, raw := range []map[string]any{
		{"link": "kv/0", "average_size": 7, "delay": "50us"},                       // YAML
		{"link": "kv/0", "average_size": 7.0, "delay": "50µs"},                     // JSON number
		{"link": "kv/0", "average_size": int64(7), "delay": 50 * time.Microsecond}, // Go values
	} {
		v, err := sl.Parse(raw)
		if err != nil {
			t.Fatalf("%v: %v", raw, err)
		}
		if v.Int("average_size") != 7 || v.Duration("delay") != 50*time.Microsecond || v.String("stream") != "downstream" {
			t.Fatalf("%v: parsed %v", raw, v.m)
		}
	}
}

// TestEveryLoopFaultHasEffects: each engine and process kind, read back
// from the name its fault records, has a row in faults' effect table with
// its layer, so the checkers know what it can excuse; and a name on a link
// reads back no effect of those kinds.
func TestEveryLoopFaultHasEffects(t *testing.T) {
	rows := faults.EffectKinds()
	env := testEnv(t)
	seen := map[string]bool{}
	for _, k := range Kinds() {
		f, err := k.New(k.Example, env)
		if err != nil {
			t.Fatalf("kind %s: example does not build: %v", k.Name, err)
		}
		n := faults.ReadName(f.Name())
		layer, ok := rows[n.Kind]
		switch {
		case k.Layer != faults.LayerEngine && k.Layer != faults.LayerProcess:
			if ok {
				t.Errorf("kind %s (%s layer): its name %q reads as %s, a kind of the effect table", k.Name, k.Layer, f.Name(), n.Kind)
			}
			continue
		case !ok:
			t.Errorf("kind %s: its fault's name %q reads as kind %q, which has no row in faults.effectRows", k.Name, f.Name(), n.Kind)
		case layer != k.Layer:
			t.Errorf("kind %s: effect row says layer %s, the catalogue %s", k.Name, layer, k.Layer)
		}
		seen[n.Kind] = true
	}
	for kind := range rows {
		if !seen[kind] {
			t.Errorf("effect row %s names no catalogue kind's fault", kind)
		}
	}
}
