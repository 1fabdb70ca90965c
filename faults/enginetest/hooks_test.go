package enginetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// heldAt sums Held over the gates of one hook on one role.
func heldAt(ctx context.Context, c *engine.Cluster, hook, role string) (held int64, paused int, err error) {
	h, err := c.Hooks()
	if err != nil {
		return 0, 0, err
	}
	st, err := h.State(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range st {
		if s.Hook == hook && s.Role == role {
			held += s.Held
			if s.Paused {
				paused++
			}
		}
	}
	return held, paused, nil
}

// noPausedGate fails if any engine gate is still closed.
func noPausedGate(t *testing.T, c *engine.Cluster) {
	t.Helper()
	h, err := c.Hooks()
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Paused {
			t.Errorf("gate %s left paused", s.HookSpec)
		}
	}
}

// Each engine hook stops its actor while a request is in flight: the
// request does not complete, the queue it is parked in shows it and the
// gate counts the hold; after Heal the request completes with the model's
// answer.
func TestEngineHooksHoldRequests(t *testing.T) {
	cases := []struct {
		fault  faults.Fault
		hook   string
		role   string
		metric string // the queue the request is parked in: its gauge reads 1
		engine int    // index in MetricsURLs
	}{
		{&faults.PauseTransferWorkers{Rank: -1, Worker: -1}, contract.HookTransferWorkers, "prefill", contract.MetricPrefillInflightQueue, 0},
		{&faults.StallBootstrapLoop{Rank: -1}, contract.HookBootstrapLoop, "prefill", contract.MetricPrefillBootstrapQueue, 0},
		{&faults.StallScheduler{Role: "decode", Rank: -1}, contract.HookScheduler, "decode", contract.MetricDecodePreallocQueue, 1},
		{&faults.StallScheduler{Role: "prefill", Rank: -1}, contract.HookScheduler, "prefill", contract.MetricPrefillBootstrapQueue, 0},
	}
	for i, tc := range cases {
		t.Run(tc.fault.Name(), func(t *testing.T) {
			testkit.NoLeaks(t)
			c := testcluster.Start(t, contract.EngineConfig{})
			held0, _, err := heldAt(t.Context(), c, tc.hook, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			heal := inject(t, c, tc.fault)
			if _, paused, _ := heldAt(t.Context(), c, tc.hook, tc.role); paused == 0 {
				t.Fatalf("no %s/%s gate paused after inject", tc.role, tc.hook)
			}
			text := longText(fmt.Sprintf("hook%d", i))
			room := uint64(5000 + i)
			res, _ := testkit.Async(t, func(ctx context.Context) error {
				got, err := testkit.Generate(ctx, c.Endpoint(), fmt.Sprintf("hook-%d", i), room, text, 8)
				if err != nil {
					return err
				}
				if want := model.Expected(text, 8); got != want {
					return fmt.Errorf("answer %q, want %q", got, want)
				}
				return nil
			})
			parked := func() error {
				if err := testkit.NotDone(res); err != nil {
					return err
				}
				held, _, err := heldAt(t.Context(), c, tc.hook, tc.role)
				if err != nil {
					return err
				}
				if held <= held0 {
					return fmt.Errorf("gate has held no actor yet (held %d)", held)
				}
				return testkit.GaugeIs(t.Context(), c.MetricsURLs()[tc.engine], tc.metric, 1)
			}
			testkit.Eventually(t, 10*time.Second, parked)
			testkit.Consistently(t, 300*time.Millisecond, parked)
			mustHeal(t, tc.fault, heal)
			noPausedGate(t, c)
			if err := testkit.Recv(t, res, 10*time.Second); err != nil {
				t.Fatalf("request after heal: %v", err)
			}
			ev := tc.fault.Evidence()
			if !ev.Effective || ev.Counters["held"] < 1 {
				t.Errorf("evidence: %+v", ev)
			}
			// Evidence's held_ns is read right after Resume, before the
			// released actors have added their hold time (gate.Gate counts
			// it on wake-up), so it may read 0; the gate's own total, once
			// the actors ran again, shows the hold lasted.
			t.Logf("evidence %v", ev.Counters)
			h, _ := c.Hooks()
			testkit.Eventually(t, 5*time.Second, func() error {
				st, err := h.State(t.Context())
				if err != nil {
					return err
				}
				var heldFor time.Duration
				for _, s := range st {
					if s.Hook == tc.hook && s.Role == tc.role {
						heldFor += s.HeldFor
					}
				}
				if heldFor < 300*time.Millisecond {
					return fmt.Errorf("gates report %v held, want at least the 300ms the request was parked", heldFor)
				}
				return nil
			})
			healthyAfter(t, c, 10*time.Second)
		})
	}
}

// Pausing the transfer workers of an idle engine holds nothing, and the
// evidence says so: a fault that did nothing is never reported as verified.
func TestEngineHookOnIdleEngineIsNotEffective(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	f := &faults.PauseTransferWorkers{Rank: -1, Worker: -1}
	heal := inject(t, c, f)
	testkit.Consistently(t, 200*time.Millisecond, func() error {
		held, paused, err := heldAt(t.Context(), c, contract.HookTransferWorkers, "prefill")
		if err != nil || held != 0 || paused == 0 {
			return fmt.Errorf("idle workers: held %d paused %d (%v)", held, paused, err)
		}
		return nil
	})
	mustHeal(t, f, heal)
	ev := f.Evidence()
	if ev.Effective || ev.Detail == "" || ev.Counters["windows"] != 1 {
		t.Errorf("evidence of a pause that held nothing: %+v", ev)
	}
	noPausedGate(t, c)
	healthyAfter(t, c, 10*time.Second)
}
