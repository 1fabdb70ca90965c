package check

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsStayPure holds doc.go's promise: the checkers' dependency
// closure has no engine, no agents runtime, no other harness package, no
// Prometheus and no vegeta or Ginkgo.
func TestImportsStayPure(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/pdchaos/pdchaos/"
	for _, p := range strings.Fields(string(out)) {
		bad := strings.HasPrefix(p, mod+"engine") || p == mod+"agents" || strings.HasPrefix(p, mod+"agents/internal") ||
			(strings.HasPrefix(p, mod+"harness") && p != mod+"harness/check") ||
			strings.HasPrefix(p, "github.com/prometheus/") || strings.HasPrefix(p, "github.com/tsenart/vegeta") ||
			strings.HasPrefix(p, "github.com/onsi/")
		if bad {
			t.Errorf("harness/check depends on %s", p)
		}
	}
}
