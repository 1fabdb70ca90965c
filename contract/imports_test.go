package contract_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/pdchaos/pdchaos"

// importRule is one rule a package's doc.go states about what it must not
// import. Pkgs and Forbid are module-relative path patterns: "x" matches
// package x, "x/..." matches x and everything below it; Forbid entries that
// contain a dot are third-party module paths matched by prefix.
type importRule struct {
	why    string
	pkgs   []string
	except []string
	forbid []string
	// deps checks every transitive dependency, not only direct imports.
	deps bool
}

// importRules are the dependency rules of docs/ARCHITECTURE.md: the
// contract is a leaf, the engine core has no IO, faults and agents never
// reach the engine runtime, only suites use Ginkgo, and the pure checkers
// pull in neither the engine nor Prometheus's client.
func importRules() []importRule {
	// The engine runtime and its protocol core. engine/model (the fake
	// model's expected answers, pure) is not part of it: agents and the
	// harness compute exact answers with it.
	runtime := []string{"engine", "engine/core"}
	return []importRule{
		{why: "contract is a leaf: standard library only", pkgs: []string{"contract"}, forbid: []string{"...", "."}, deps: true},
		{why: "gate is a leaf: standard library only", pkgs: []string{"gate"}, forbid: []string{"...", "."}, deps: true},
		{why: "zmtp is a codec: standard library only", pkgs: []string{"zmtp"}, forbid: []string{"...", "."}, deps: true},
		{why: "sse is a reader: standard library only", pkgs: []string{"sse"}, forbid: []string{"...", "."}, deps: true},
		{why: "engine/core is pure: no sockets, files, processes or goroutine plumbing",
			pkgs:   []string{"engine/core"},
			forbid: []string{"std:net", "std:net/http", "std:os", "std:os/exec", "std:os/signal", "std:syscall", "std:math/rand", "std:math/rand/v2", "engine", "faults/...", "agents/...", "harness/...", "suites/..."}},
		{why: "sim is deterministic: no sockets, files, processes, global randomness, engine runtime, injectors, agents runtime or harness",
			pkgs:   []string{"sim"},
			forbid: []string{"std:net", "std:net/http", "std:os", "std:os/exec", "std:os/signal", "std:syscall", "std:math/rand", "engine", "faults/catalog", "faults/network", "faults/protocol", "faults/process", "faults/hooks", "agents", "harness", "harness/record", "harness/target", "suites/..."}},
		{why: "the engine never imports faults, agents, harness or suites",
			pkgs: []string{"engine/..."}, forbid: []string{"faults/...", "agents/...", "harness/...", "suites/...", "github.com/onsi/"}},
		{why: "fault injectors never import the engine runtime (only the contract)",
			pkgs: []string{"faults/..."}, except: []string{"faults/enginetest"}, forbid: append(runtime, "engine/...", "agents/...", "harness/...", "suites/...", "github.com/onsi/"), deps: true},
		{why: "fault injectors other than Toxiproxy's pull in no Prometheus client",
			pkgs: []string{"faults/..."}, except: []string{"faults/enginetest", "faults/network", "faults/catalog"}, forbid: []string{"github.com/prometheus/client_golang"}, deps: true},
		{why: "the pure checkers read recorded events only: no engine, no agents runtime, no injectors, no Prometheus, no network",
			pkgs: []string{"harness/check"}, forbid: append(runtime, "engine/...", "agents", "internal/fakeserver", "faults/network", "faults/protocol",
				"faults/process", "faults/catalog", "faults/hooks", "harness", "harness/record", "harness/target", "github.com/prometheus/",
				"github.com/tsenart/", "std:net", "std:net/http", "std:os/exec"), deps: true},
		{why: "only harness/target reaches the engine runtime (the bundled target); the rest of the harness goes through it",
			pkgs: []string{"harness", "harness/check", "harness/record", "harness/doctor"}, forbid: runtime},
		{why: "the recorder reads targets through its own small interface, not harness/target",
			pkgs: []string{"harness/record"}, forbid: append(runtime, "engine/...", "harness", "harness/target"), deps: true},
		{why: "agents never import the engine runtime, faults, harness or suites",
			pkgs: []string{"agents/..."}, forbid: []string{"engine", "engine/core", "faults/...", "harness/...", "suites/...", "github.com/onsi/"}, deps: true},
		{why: "test support is for tests: no product package imports it",
			pkgs: []string{"..."}, except: []string{"internal/testkit/..."}, forbid: []string{"internal/testkit/..."}},
		{why: "testkit sits below the engine and zmtp, whose internal tests use it",
			pkgs: []string{"internal/testkit"}, forbid: []string{"engine", "engine/core", "zmtp/...", "faults/...", "agents/...", "harness/...", "suites/...", "cmd/...", "github.com/onsi/"}, deps: true},
		{why: "reports render stored runs only: no engine runtime, no injectors, no agents runtime, no harness, no Ginkgo",
			pkgs: []string{"reports/..."}, forbid: append(runtime, "engine/...", "agents", "internal/fakeserver", "faults/network", "faults/protocol",
				"faults/process", "faults/catalog", "faults/hooks", "harness", "harness/record", "harness/target", "suites/...",
				"github.com/onsi/", "github.com/prometheus/", "github.com/tsenart/", "std:net/http", "std:os/exec"), deps: true},
		{why: "the fake chat server is the agents' test peer and the bench's trivial server: no engine runtime, no harness",
			pkgs: []string{"internal/fakeserver"}, forbid: append(runtime, "faults/...", "agents/...", "harness/...", "suites/...", "github.com/onsi/"), deps: true},
		{why: "bench measures the product from above: only the CLI imports it",
			pkgs: []string{"..."}, except: []string{"bench", "cmd/..."}, forbid: []string{"bench"}},
		{why: "the mutation tool edits and runs copies of the module: it imports none of it (standard library only)",
			pkgs: []string{"internal/mutate"}, forbid: []string{"...", "."}, deps: true},
		{why: "the harness never imports suites or Ginkgo",
			pkgs: []string{"harness/...", "cmd/..."}, forbid: []string{"suites/gate", "github.com/onsi/"}, deps: true},
	}
}

type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// listPackages runs go list over the module (product code, not tests).
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v: %s", err, errb.String())
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// matches reports whether a module-relative package path rel matches
// pattern; "..." alone matches every package of the module.
func matches(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

// forbidden reports whether an import path violates one forbid entry.
func forbidden(entry, imp string) bool {
	isStd := !strings.Contains(strings.Split(imp, "/")[0], ".")
	switch {
	case entry == "...": // anything in this module
		return strings.HasPrefix(imp, module+"/")
	case entry == ".": // anything outside the standard library
		return !isStd && !strings.HasPrefix(imp, module+"/")
	case strings.HasPrefix(entry, "std:"):
		return imp == strings.TrimPrefix(entry, "std:")
	case strings.Contains(strings.Split(entry, "/")[0], "."):
		return strings.HasPrefix(imp, entry)
	}
	rel, ok := strings.CutPrefix(imp, module+"/")
	return ok && matches(entry, rel)
}

// violations applies rules to pkgs and returns one line per broken rule.
func violations(rules []importRule, pkgs map[string]pkgInfo) []string {
	var out []string
	for _, r := range rules {
		for rel, p := range pkgs {
			in := false
			for _, pat := range r.pkgs {
				in = in || matches(pat, rel)
			}
			for _, pat := range r.except {
				in = in && !matches(pat, rel)
			}
			if !in {
				continue
			}
			list := p.Imports
			if r.deps {
				list = p.Deps
			}
			for _, imp := range list {
				if imp == p.ImportPath {
					continue
				}
				for _, f := range r.forbid {
					if forbidden(f, imp) {
						out = append(out, rel+" imports "+imp+" ("+r.why+")")
						break
					}
				}
			}
		}
	}
	return out
}

// TestImportRules enforces the rules the doc.go files state. It fails
// naming each package, the import that breaks a rule and the rule.
func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	pkgs := listPackages(t)
	for _, want := range []string{"contract", "engine", "engine/core", "faults", "agents", "harness", "harness/check", "harness/record", "harness/target", "internal/testkit", "reports"} {
		if _, ok := pkgs[want]; !ok {
			t.Fatalf("go list found no package %s: the rules would check nothing", want)
		}
	}
	for _, v := range violations(importRules(), pkgs) {
		t.Error(v)
	}
}

// TestImportRulesCatch proves the rules can fail: a fault injector that
// imports the engine, and a contract that imports Prometheus, are caught.
func TestImportRulesCatch(t *testing.T) {
	pkgs := map[string]pkgInfo{
		"faults/network":    {ImportPath: module + "/faults/network", Imports: []string{module + "/engine"}, Deps: []string{module + "/engine", module + "/contract"}},
		"contract":          {ImportPath: module + "/contract", Imports: []string{"github.com/prometheus/client_golang/prometheus"}, Deps: []string{"github.com/prometheus/client_golang/prometheus"}},
		"engine/core":       {ImportPath: module + "/engine/core", Imports: []string{"net/http", path.Join(module, "contract")}},
		"faults/enginetest": {ImportPath: module + "/faults/enginetest", Imports: []string{module + "/engine"}, Deps: []string{module + "/engine"}},
		"reports":           {ImportPath: module + "/reports", Imports: []string{module + "/harness"}, Deps: []string{module + "/harness", module + "/engine"}},
	}
	got := violations(importRules(), pkgs)
	want := []string{"faults/network imports " + module + "/engine", "contract imports github.com/prometheus", "engine/core imports net/http",
		"reports imports " + module + "/harness"}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("no violation %q in %q", w, got)
		}
	}
	for _, g := range got {
		if strings.HasPrefix(g, "faults/enginetest") {
			t.Errorf("excepted package reported: %s", g)
		}
	}
}
