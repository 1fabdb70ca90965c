package proctree

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestStatOfSelf(t *testing.T) {
	st, ppid, err := Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st != 'R' && st != 'S' {
		t.Errorf("own state %c", st)
	}
	if ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", ppid, os.Getppid())
	}
	if !slices.Contains(Ancestors(os.Getpid()), os.Getppid()) {
		t.Error("ancestors lack the parent")
	}
}

// TestChildrenBothWays: the kernel's children files and the /proc scan
// agree on a parent sh with a child sleep.
func TestChildrenBothWays(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 600 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		for _, p := range Tree(cmd.Process.Pid) {
			if pr, err := os.FindProcess(p); err == nil {
				_ = pr.Kill()
			}
		}
		<-done
	})
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for tr := Tree(pid); len(tr) != 2 || Cmdline(tr[1]) != "sleep 600"; tr = Tree(pid) { // dash: vfork, then exec
		if time.Now().After(deadline) {
			t.Fatalf("tree %v, want sh and sleep", Tree(pid))
		}
		<-tick.C
	}
	kids, scanned := Children(pid), scanChildren(pid)
	if len(kids) != 1 || !slices.Equal(kids, scanned) {
		t.Fatalf("children %v, scan %v", kids, scanned)
	}
	if Cmdline(kids[0]) != "sleep 600" {
		t.Errorf("child cmdline %q", Cmdline(kids[0]))
	}
	if st, _, _ := Stat(999999999); st != 0 {
		t.Error("a missing pid has a state")
	}
}
