package process_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

func state(t *testing.T, procs *faketarget.Processes, role string) (int, byte) {
	t.Helper()
	pid, err := procs.PID(role)
	if err != nil {
		t.Fatal(err)
	}
	st, err := process.State(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pid, st
}

func TestStopFreezesUntilHeal(t *testing.T) {
	tg := faketarget.New()
	procs := faketarget.NewProcesses(t, "prefill", "decode")
	tg.Procs = procs
	f := &process.Stop{Role: "prefill"}
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if _, st := state(t, procs, "prefill"); st != 'T' {
		t.Errorf("prefill state %q while stopped, want T", st)
	}
	if _, st := state(t, procs, "decode"); st == 'T' {
		t.Error("decode stopped too")
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	faketarget.Eventually(t, process.ObserveTimeout, func() bool {
		_, st := state(t, procs, "prefill")
		return st != 'T' && st != 't'
	}, "prefill still stopped after heal")
	if ev := f.Evidence(); !ev.Effective || ev.Counters["continued"] != 1 {
		t.Errorf("evidence %+v", ev)
	}
}

func TestKillThenHealRestarts(t *testing.T) {
	tg := faketarget.New()
	procs := faketarget.NewProcesses(t, "decode")
	tg.Procs = procs
	old, _ := state(t, procs, "decode")
	f := &process.Kill{Role: "decode"}
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if procs.Restarts() != 0 {
		t.Fatal("restarted before heal")
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid, st := state(t, procs, "decode")
	if procs.Restarts() != 1 || pid == old || st == 0 {
		t.Errorf("after heal: restarts %d, pid %d (was %d), state %q", procs.Restarts(), pid, old, st)
	}
	if ev := f.Evidence(); !ev.Effective || ev.Counters["restarts"] != 1 {
		t.Errorf("evidence %+v", ev)
	}
}

func TestKillWithRestart(t *testing.T) {
	tg := faketarget.New()
	procs := faketarget.NewProcesses(t, "router")
	tg.Procs = procs
	f := &process.Kill{Role: "router", Restart: true}
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if procs.Restarts() != 1 {
		t.Fatalf("restarts %d after inject, want 1", procs.Restarts())
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if procs.Restarts() != 1 {
		t.Errorf("heal restarted again: %d", procs.Restarts())
	}
}

func TestUnsupported(t *testing.T) {
	tg := faketarget.New()
	if _, err := (&process.Stop{Role: "prefill"}).Inject(context.Background(), tg); !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("no process control: %v", err)
	}
	tg.Procs = faketarget.NewProcesses(t, "prefill")
	_, err := (&process.Kill{Role: "decode"}).Inject(context.Background(), tg)
	if !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), "prefill") {
		t.Errorf("unknown role: %v", err)
	}
}

func TestResetContinuesStoppedProcesses(t *testing.T) {
	tg := faketarget.New()
	procs := faketarget.NewProcesses(t, "prefill")
	tg.Procs = procs
	if _, err := (&process.Stop{Role: "prefill"}).Inject(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	// The heal is dropped, as by a crashed run; Reset must still clear it.
	if err := faults.Reset(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	faketarget.Eventually(t, process.ObserveTimeout, func() bool {
		_, st := state(t, procs, "prefill")
		return st != 'T'
	}, "prefill still stopped after Reset")
}
