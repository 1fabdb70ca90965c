package schedule_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// TestInterruptedRunLeavesNothing interrupts a Player while a fault of every
// layer is active, by cancel and by a panic in a callback, and shows that no
// toxic, downed link, paused gate or stopped process remains, and that after
// Network.Close no proxy, interposed link or goroutine remains.
func TestInterruptedRunLeavesNothing(t *testing.T) {
	for _, how := range []string{"cancel", "panic"} {
		t.Run(how, func(t *testing.T) {
			testkit.NoLeaks(t)

			sched := contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0}
			tg := faketarget.New(faketarget.EchoLink(t, "kv/0"), faketarget.EchoLink(t, "bootstrap"))
			hooks := faketarget.NewHooks(sched)
			procs := faketarget.NewProcesses(t, "prefill")
			tg.Hook, tg.Procs = hooks, procs
			n := network.New()
			t.Cleanup(func() { _ = n.Close(context.Background()) })

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			waitActor := faketarget.RunActor(ctx, hooks.Gate(sched), nil)
			defer waitActor()
			defer cancel()

			all := []faults.Fault{
				&network.Timeout{Net: n, Link: "kv/0"},
				&network.Latency{Net: n, Link: "kv/0", Delay: time.Second},
				&network.LinkDown{Net: n, Link: "bootstrap"},
				&faults.StallScheduler{Role: "decode", Rank: 0},
				&process.Stop{Role: "prefill"},
			}
			var entries []schedule.Entry
			for _, f := range all {
				entries = append(entries, schedule.Entry{Fault: f, For: schedule.Fixed(time.Hour)})
			}
			tl, err := schedule.Plan(1, entries, 2*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			started := 0
			p := &schedule.Player{Target: tg, Timeline: tl, OnStart: func(schedule.Record) {
				started++
				if started < len(all) {
					return
				}
				if len(n.Toxics()["kv/0"]) != 2 || !hooks.Gate(sched).Paused() {
					t.Errorf("faults not in place: toxics %v", n.Toxics())
				}
				if how == "panic" {
					panic("interrupted")
				}
				cancel()
			}}
			func() {
				defer func() {
					if r := recover(); (r != nil) != (how == "panic") {
						t.Errorf("recovered %v", r)
					}
				}()
				_, err = p.Play(ctx, time.Now())
			}()
			if how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Errorf("play: %v, want canceled", err)
			}
			if started != len(all) {
				t.Fatalf("%d of %d faults started", started, len(all))
			}

			if tx := n.Toxics(); len(tx["kv/0"]) != 0 || len(tx["bootstrap"]) != 0 {
				t.Errorf("toxics left: %v", tx)
			}
			for _, link := range []string{"kv/0", "bootstrap"} {
				if err := roundTrip(tg, link); err != nil {
					t.Errorf("link %s after interrupted run: %v", link, err)
				}
			}
			if hooks.Gate(sched).Paused() {
				t.Error("scheduler gate left paused")
			}
			pid, _ := procs.PID("prefill")
			if st, _ := process.State(pid); st == 'T' {
				t.Error("prefill left stopped")
			}

			if err := n.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if px := n.Proxies(); len(px) != 0 {
				t.Errorf("proxies left after close: %v", px)
			}
			if ip := tg.Interposed(); len(ip) != 0 {
				t.Errorf("links interposed after close: %v", ip)
			}
		})
	}
}

func roundTrip(tg *faketarget.Target, link string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tg.Dial(ctx, link)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ok")); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 2))
	return err
}
