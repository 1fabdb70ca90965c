package faults_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

var (
	w0    = contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: 0, Worker: 0}
	w1    = contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: 0, Worker: 1}
	boot0 = contract.HookSpec{Hook: contract.HookBootstrapLoop, Role: "prefill", Rank: 0}
	sch0  = contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0}
)

func hookTarget() (*faketarget.Target, *faketarget.Hooks) {
	h := faketarget.NewHooks(w0, w1, boot0, sch0)
	tg := faketarget.New()
	tg.Hook = h
	return tg, h
}

func TestHookFaultsHoldActorsUntilHeal(t *testing.T) {
	cases := []struct {
		name  string
		fault faults.Fault
		gate  contract.HookSpec
		other contract.HookSpec // must keep running
	}{
		{"one worker", &faults.PauseTransferWorkers{Rank: 0, Worker: 1}, w1, w0},
		{"bootstrap", &faults.StallBootstrapLoop{Rank: 0}, boot0, w0},
		{"scheduler", &faults.StallScheduler{Role: "decode", Rank: -1}, sch0, boot0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, h := hookTarget()
			ctx, cancel := context.WithCancel(context.Background())
			var steps, otherSteps atomic.Int64
			waitA := faketarget.RunActor(ctx, h.Gate(tc.gate), func() { steps.Add(1) })
			waitB := faketarget.RunActor(ctx, h.Gate(tc.other), func() { otherSteps.Add(1) })
			defer func() { cancel(); waitA(); waitB() }()

			heal, err := tc.fault.Inject(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			faketarget.Eventually(t, 10*time.Second, func() bool {
				held, _ := h.Gate(tc.gate).Stats()
				return held > 0
			}, "actor never held")
			frozen := steps.Load()
			o := otherSteps.Load()
			faketarget.Eventually(t, 10*time.Second, func() bool { return otherSteps.Load() > o+10 },
				"other actor stopped too")
			if steps.Load() != frozen {
				t.Errorf("held actor made progress: %d → %d", frozen, steps.Load())
			}
			if err := heal(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := heal(context.Background()); err != nil {
				t.Fatal(err)
			}
			faketarget.Eventually(t, 10*time.Second, func() bool { return steps.Load() > frozen+10 },
				"actor did not resume after heal")
			if ev := tc.fault.Evidence(); !ev.Effective || ev.Counters["held"] < 1 {
				t.Errorf("evidence %+v", ev)
			}
			if tc.fault.Layer() != faults.LayerEngine {
				t.Errorf("layer %s", tc.fault.Layer())
			}
		})
	}
}

func TestHookPausedButNothingHeld(t *testing.T) {
	tg, h := hookTarget()
	f := &faults.PauseTransferWorkers{Rank: -1, Worker: -1}
	heal, err := f.Inject(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Gate(w0).Paused() || !h.Gate(w1).Paused() {
		t.Fatal("workers not paused")
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := f.Evidence(); ev.Effective {
		t.Errorf("no actor held, yet effective: %+v", ev)
	}
}

func TestHookFaultErrors(t *testing.T) {
	tg, h := hookTarget()
	cases := []struct {
		name  string
		fault faults.Fault
		want  string
		is    error
	}{
		{"bad role", &faults.StallScheduler{Role: "router"}, "Role", nil},
		{"bad rank", &faults.StallBootstrapLoop{Rank: -2}, "Rank", nil},
		{"bad worker", &faults.PauseTransferWorkers{Worker: -3}, "Worker", nil},
		{"unknown rank", &faults.StallScheduler{Role: "decode", Rank: 7}, "rank=7", contract.ErrUnknownHook},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			heal, err := tc.fault.Inject(context.Background(), tg)
			if err == nil || heal != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %s", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err %v is not %v", err, tc.is)
			}
		})
	}
	states, _ := h.State(context.Background())
	for _, s := range states {
		if s.Paused {
			t.Errorf("%s paused after failed injections", s.HookSpec)
		}
	}
	if _, err := (&faults.StallBootstrapLoop{}).Inject(context.Background(), faketarget.New()); !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("no hooks: %v", err)
	}
}

func TestResetResumesHooks(t *testing.T) {
	tg, h := hookTarget()
	if _, err := (&faults.StallScheduler{Role: "decode", Rank: 0}).Inject(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	if err := faults.Reset(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	if h.Gate(sch0).Paused() {
		t.Error("scheduler paused after Reset")
	}
	if err := faults.Reset(context.Background(), faketarget.New()); err != nil {
		t.Errorf("reset of a target without hooks or processes: %v", err)
	}
}

// Two faults pausing the same gate heal separately: the first heal leaves
// the gate closed for the second fault's window, the second opens it.
func TestOverlappingHookFaultsHealSeparately(t *testing.T) {
	tg, h := hookTarget()
	a := &faults.PauseTransferWorkers{Rank: 0, Worker: -1}
	b := &faults.PauseTransferWorkers{Rank: 0, Worker: 1}
	healA, err := a.Inject(testkit.Context(t), tg)
	if err != nil {
		t.Fatal(err)
	}
	healB, err := b.Inject(testkit.Context(t), tg)
	if err != nil {
		t.Fatal(err)
	}
	if err := healA(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if h.Gate(w0).Paused() || !h.Gate(w1).Paused() {
		t.Fatalf("after the first heal: worker 0 paused=%v (want open), worker 1 paused=%v (want still paused by the second fault)",
			h.Gate(w0).Paused(), h.Gate(w1).Paused())
	}
	if err := healB(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if h.Gate(w1).Paused() {
		t.Fatal("worker 1 still paused after both heals")
	}
}
