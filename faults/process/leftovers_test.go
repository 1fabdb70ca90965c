package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/internal/proctree"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// deadPID returns a pid no process has.
func deadPID(t *testing.T) int {
	t.Helper()
	for pid := 4_000_000; pid > 100_000; pid -= 7919 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return pid
		}
	}
	t.Fatal("no free pid found")
	return 0
}

// labelled starts a shell that sleeps, in its own process group, carrying
// a run label in its command line like a role process does.
func labelled(t *testing.T, label string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 600; :", "pdchaos-engine", "--"+contract.RunLabelFlag+"="+label)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	// dash starts sleep with vfork: a SIGSTOP between vfork and exec would
	// leave the shell in 'D' until the child runs, so wait for the exec.
	testkit.Eventually(t, 5*time.Second, func() error {
		for _, c := range proctree.Children(cmd.Process.Pid) {
			if proctree.Cmdline(c) == "sleep 600" {
				return nil
			}
		}
		return errors.New("sleep not exec'd yet")
	})
	return cmd
}

// A stopped role process whose harness died is found, and ended with its
// whole process group; one whose harness is alive is left alone.
func TestLeftoversFoundAndEnded(t *testing.T) {
	orphan := labelled(t, RunLabel(deadPID(t), 1))
	owned := labelled(t, RunLabel(os.Getpid(), 2))
	if err := syscall.Kill(-orphan.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var found []Leftover
	testkit.Eventually(t, 10*time.Second, func() error {
		ls, err := FindLeftovers("/proc")
		if err != nil {
			return err
		}
		found = nil
		for _, l := range ls {
			if l.PID == owned.Process.Pid {
				t.Fatalf("a process of a live harness listed as leftover: %+v", l)
			}
			if l.PID == orphan.Process.Pid {
				found = append(found, l)
			}
		}
		if len(found) != 1 || found[0].State != 'T' {
			return fmt.Errorf("orphan not found stopped: %+v", found)
		}
		return nil
	})
	if err := EndLeftovers(testkit.Context(t), found, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		// The whole group is gone: no process is left in it.
		if err := syscall.Kill(-orphan.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("process group %d still has members (%v)", orphan.Process.Pid, err)
		}
		return nil
	})
	if st, _ := State(owned.Process.Pid); st == 0 || st == 'Z' {
		t.Fatal("the live harness's process was ended")
	}
}

func TestRunLabelParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pid  int
		ok   bool
	}{
		{[]string{"pdchaos", "engine", "--run-label=pdchaos-42-7"}, 42, true},
		{[]string{"pdchaos", "engine", "--run-label", "pdchaos-42-7"}, 42, true},
		{[]string{"pdchaos", "engine", "--run-label=other-42-7"}, 0, false},
		{[]string{"pdchaos", "engine", "--run-label=pdchaos-x-7"}, 0, false},
		{[]string{"pdchaos", "engine"}, 0, false},
	} {
		_, pid, ok := runLabel(tc.args)
		if ok != tc.ok || (ok && pid != tc.pid) {
			t.Errorf("runLabel(%q) = %d, %v; want %d, %v", tc.args, pid, ok, tc.pid, tc.ok)
		}
	}
}
