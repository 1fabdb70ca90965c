package target

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// TestExternalProcTreeStopContinue: --proc prefill=PATTERN finds a parent
// sh (with a child sleep, the shape of an SGLang server and its scheduler)
// by its command line; sigstop freezes both, heal continues both, verified
// from /proc; sigkill is refused before anything is killed.
func TestExternalProcTreeStopContinue(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 600 & wait # ext-proc-tree-4c1d")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		for _, p := range process.Tree(cmd.Process.Pid) {
			_ = exec.Command("kill", "-CONT", "--", itoa(p)).Run()
			_ = exec.Command("kill", "-KILL", "--", itoa(p)).Run()
		}
		<-done
	})
	testkit.Eventually(t, 5*time.Second, func() error {
		// dash starts sleep with vfork: wait for the exec, or a stop
		// between the two would leave sh in 'D'.
		if tr := process.Tree(cmd.Process.Pid); len(tr) != 2 || !execd(tr[1]) {
			return errors.New("sleep not started yet")
		}
		return nil
	})
	ext := &External{Router: "http://127.0.0.1:1", Metrics: []string{"http://127.0.0.1:1/metrics"},
		Procs: map[string]string{"prefill": `ext-proc-tree-4c1d`}}
	if err := ext.Validate(); err != nil {
		t.Fatal(err)
	}
	procs, err := ext.Processes()
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := procs.PID("prefill"); err != nil || pid != cmd.Process.Pid {
		t.Fatalf("pid %d, %v; want the sh %d", pid, err, cmd.Process.Pid)
	}
	tree := process.Tree(cmd.Process.Pid)
	stop := &process.Stop{Role: "prefill"}
	heal, err := stop.Inject(t.Context(), ext)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tree {
		if st, _ := process.State(p); st != 'T' {
			t.Errorf("pid %d state %c while stopped, want T", p, st)
		}
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := process.StoppedIn(cmd.Process.Pid); len(s) > 0 {
		t.Fatalf("still stopped after heal: %v", s)
	}
	_, err = (&process.Kill{Role: "prefill", Restart: true}).Inject(t.Context(), ext)
	if !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), "the harness did not start this process") {
		t.Fatalf("sigkill on external: %v, want unsupported restart", err)
	}
	if len(process.Tree(cmd.Process.Pid)) != 2 {
		t.Fatal("sigkill touched the tree")
	}
	if err := (&External{Router: "http://x", Metrics: []string{"m"}, Procs: map[string]string{"gpu": "x"}}).Validate(); err == nil {
		t.Fatal("unknown role accepted")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// execd says whether pid runs sleep (its exec is done).
func execd(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(string(b), "sleep\x00")
}
