package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// TestRunCtrlCWhileProcTreeFrozen is the CLI end to end: `pdchaos run
// --target external --proc prefill=PATTERN` against the bundled engine,
// where the pattern names a parent sh with a child sleep. The scenario
// freezes that tree for far longer than the test waits; once /proc shows
// both processes stopped the run's context is cancelled (what Ctrl-C does
// through signal.NotifyContext), and when the command returns every
// process of the tree runs again.
func TestRunCtrlCWhileProcTreeFrozen(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a scenario")
	}
	c := testcluster.Start(t, contract.EngineConfig{})
	tree := shTree(t, "ctrl-c-tree-91ab")

	dir := t.TempDir()
	sc := filepath.Join(dir, "freeze.yaml")
	if err := os.WriteFile(sc, []byte(`name: freeze-prefill-tree
duration: 60s
agents:
  preset: opencode-30
  scale: 0.1
  options:
    agents: 2
    start_spread: 10ms
    warm_up: 10ms
    max_tokens: 4
    think_time: 50ms
faults:
  - kind: sigstop
    role: prefill
    at: 0s
    for: 50s
checks:
  drain_deadline: 2s
  probes: 1
  probe_deadline: 2s
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	root := newRoot(&selfStats{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"run", sc, "--target", "external", "--router", c.Endpoint(),
		"--metrics", c.MetricsURLs()[0], "--metrics", c.MetricsURLs()[1],
		"--proc", "prefill=ctrl-c-tree-91ab", "--results", dir})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var frozen string
	testkit.Eventually(t, 20*time.Second, func() error {
		var b strings.Builder
		for _, p := range tree {
			st, _ := process.State(p)
			fmt.Fprintf(&b, "%d:%c ", p, st)
			if st != 'T' {
				return fmt.Errorf("tree not frozen yet: %s", b.String())
			}
		}
		frozen = b.String()
		return nil
	})
	cancel() // Ctrl-C
	select {
	case err := <-done:
		t.Logf("run returned %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return after cancel:\n%s", out.String())
	}
	var after strings.Builder
	for _, p := range tree {
		st, _ := process.State(p)
		fmt.Fprintf(&after, "%d:%c ", p, st)
		if st == 'T' || st == 't' {
			t.Errorf("pid %d still stopped after Ctrl-C", p)
		}
	}
	t.Logf("frozen %s; after Ctrl-C %s\n%s", frozen, after.String(), out.String())
	if !strings.Contains(out.String(), "health: router /readiness 200") {
		t.Errorf("run output names no health endpoints:\n%s", out.String())
	}
}

// shTree starts a parent sh (tagged with marker in its command line) with
// a child sleep, the shape of an SGLang server and its scheduler, and
// returns both pids once /proc shows the child.
func shTree(t *testing.T, marker string) []int {
	t.Helper()
	sh := exec.Command("sh", "-c", "sleep 600 & wait # "+marker)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	shDone := make(chan struct{})
	go func() { _ = sh.Wait(); close(shDone) }()
	t.Cleanup(func() {
		for _, p := range process.Tree(sh.Process.Pid) {
			_ = exec.Command("kill", "-CONT", strconv.Itoa(p)).Run()
			_ = exec.Command("kill", "-KILL", strconv.Itoa(p)).Run()
		}
		<-shDone
	})
	testkit.Eventually(t, 5*time.Second, func() error {
		// dash starts sleep with vfork: wait for the exec, or a stop
		// between the two would leave sh in 'D'.
		if tr := process.Tree(sh.Process.Pid); len(tr) != 2 || !execd(tr[1]) {
			return errors.New("sleep not started yet")
		}
		return nil
	})
	return process.Tree(sh.Process.Pid)
}

// TestKillPresetRefusedOnExternal: decode-restart needs a restart the
// harness cannot do for a process it did not start; the run is refused
// before it starts (exit 3, saying so) and nothing is killed.
func TestKillPresetRefusedOnExternal(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{})
	tree := shTree(t, "kill-refused-5d2f")
	code, out := execute(t, "run", "decode-restart", "--target", "external", "--router", c.Endpoint(),
		"--metrics", c.MetricsURLs()[0], "--metrics", c.MetricsURLs()[1],
		"--proc", "decode=kill-refused-5d2f", "--results", t.TempDir())
	if code != exitHarness || !strings.Contains(out, "the target cannot take fault sigkill(decode,restart): restart decode: unsupported by target: the harness did not start this process") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if got := process.Tree(tree[0]); len(got) != 2 {
		t.Fatalf("tree %v after the refused run, want it untouched", got)
	}
	t.Log(out)
}

// execd says whether pid runs sleep (its exec is done).
func execd(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(string(b), "sleep\x00")
}
