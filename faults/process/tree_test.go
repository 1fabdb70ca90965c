package process_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/faults/internal/proctree"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// shTree starts a parent sh with a child sleep (the shape of an SGLang
// server with its scheduler subprocess) and returns the parent's pid once
// /proc shows the child. Both are killed at test end.
func shTree(t *testing.T, marker string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 600 & wait # "+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		for _, p := range process.Tree(pid) {
			_ = exec.Command("kill", "-CONT", fmt.Sprint(p)).Run()
			_ = exec.Command("kill", "-KILL", fmt.Sprint(p)).Run()
		}
		_ = cmd.Process.Kill()
		<-done
	})
	// dash starts sleep with vfork: stopping the tree between vfork and exec
	// would leave sh in 'D', so wait until the child has exec'd.
	faketarget.Eventually(t, 5*time.Second, func() bool {
		tr := process.Tree(pid)
		return len(tr) == 2 && proctree.Cmdline(tr[1]) == "sleep 600"
	}, "sh never started its sleep")
	return pid
}

// states reads each pid's state from /proc.
func states(t *testing.T, pids []int) string {
	t.Helper()
	var b strings.Builder
	for _, p := range pids {
		st, err := process.State(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d:%c ", p, st)
	}
	return b.String()
}

func allStopped(t *testing.T, pids []int) bool {
	t.Helper()
	for _, p := range pids {
		if st, _ := process.State(p); st != 'T' {
			return false
		}
	}
	return true
}

// treeProcs is one role ("prefill") whose process is a tree; no restart.
type treeProcs struct{ pid int }

func (p treeProcs) Roles() []string { return []string{"prefill"} }
func (p treeProcs) PID(string) (int, error) {
	return p.pid, nil
}
func (p treeProcs) Restart(context.Context, string) error {
	return fmt.Errorf("restart: %w", contract.ErrUnsupported)
}
func (p treeProcs) CanRestart(string) error {
	return fmt.Errorf("restart: %w: not ours", contract.ErrUnsupported)
}

func TestStopFreezesTheWholeTree(t *testing.T) {
	pid := shTree(t, "stop-tree")
	tree := process.Tree(pid)
	tg := faketarget.New()
	tg.Procs = treeProcs{pid}
	f := &process.Stop{Role: "prefill"}
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if !allStopped(t, tree) {
		t.Fatalf("after inject: %s, want every process of the tree T", states(t, tree))
	}
	t.Logf("stopped: %s", states(t, tree))
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := process.StoppedIn(pid); len(s) > 0 {
		t.Fatalf("after heal: %v still stopped (%s)", s, states(t, tree))
	}
	t.Logf("continued: %s", states(t, tree))
	ev := f.Evidence()
	if !ev.Effective || ev.Counters["processes_stopped"] != 2 || ev.Counters["continued"] != 1 {
		t.Errorf("evidence %+v, want effective, 2 processes stopped, continued once", ev)
	}
}

// TestCancelWhileFrozenLeavesNothingStopped is Ctrl-C in the middle of a
// stop window: the player's ctx ends and every process of the tree runs
// again before Play returns. A panic in the run heals the same way.
func TestCancelWhileFrozenLeavesNothingStopped(t *testing.T) {
	for _, how := range []string{"cancel", "panic"} {
		t.Run(how, func(t *testing.T) {
			pid := shTree(t, "cancel-"+how)
			tree := process.Tree(pid)
			tg := faketarget.New()
			tg.Procs = treeProcs{pid}
			f := &process.Stop{Role: "prefill"}
			tl, err := schedule.Plan(1, []schedule.Entry{{Fault: f, For: schedule.Fixed(time.Hour)}}, 2*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var frozen string
			p := &schedule.Player{Target: tg, Timeline: tl, OnStart: func(schedule.Record) {
				if !allStopped(t, tree) {
					t.Errorf("window started but tree is %s", states(t, tree))
				}
				frozen = states(t, tree)
				if how == "panic" {
					panic("run panicked while frozen")
				}
				cancel() // Ctrl-C
			}}
			func() {
				defer func() {
					if r := recover(); r != nil && how != "panic" {
						t.Fatalf("unexpected panic %v", r)
					}
				}()
				_, err = p.Play(ctx, time.Now())
			}()
			if how == "cancel" && !errors.Is(err, context.Canceled) && err != nil {
				t.Fatalf("play: %v", err)
			}
			if s := process.StoppedIn(pid); len(s) > 0 || slices.ContainsFunc(tree, func(p int) bool { st, _ := process.State(p); return st == 'T' }) {
				t.Fatalf("after %s: %v still stopped (%s)", how, s, states(t, tree))
			}
			t.Logf("frozen %s; after %s: %s", frozen, how, states(t, tree))
		})
	}
}

func TestKillRefusedWhenRoleCannotRestart(t *testing.T) {
	pid := shTree(t, "kill-refused")
	tg := faketarget.New()
	tg.Procs = treeProcs{pid}
	_, err := (&process.Kill{Role: "prefill", Restart: true}).Inject(context.Background(), tg)
	if !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), "nothing killed") {
		t.Fatalf("err %v, want unsupported, nothing killed", err)
	}
	if len(process.Tree(pid)) != 2 {
		t.Fatal("tree was touched")
	}
}

func TestKillTreeLeavesNoneBehind(t *testing.T) {
	pid := shTree(t, "kill-tree")
	tree := process.Tree(pid)
	killed, err := process.KillTree(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 2 {
		t.Fatalf("killed %v, want 2", killed)
	}
	for _, p := range tree {
		if st, _ := process.State(p); st != 0 && st != 'Z' {
			t.Errorf("pid %d state %c after kill", p, st)
		}
	}
}

func TestFindProcess(t *testing.T) {
	pid := shTree(t, "find-me-7f3a")
	got, err := process.FindProcess(`sh -c sleep 600 & wait # find-me-7f3a`)
	if err != nil || got != pid {
		t.Fatalf("find: %d, %v; want %d", got, err, pid)
	}
	if got, err := process.FindProcess(fmt.Sprint(pid)); err != nil || got != pid {
		t.Fatalf("find by pid: %d, %v", got, err)
	}
	if _, err := process.FindProcess("no-such-process-9c2e1"); err == nil || !strings.Contains(err.Error(), "no process") {
		t.Fatalf("err %v", err)
	}
	if _, err := process.FindProcess("("); err == nil {
		t.Fatal("bad regexp accepted")
	}
}
