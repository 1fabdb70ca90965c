package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// A run is interrupted mid-fault — by ctx cancel, by a panic in OnStart and
// by a panic in OnEnd — while a toxic is on the KV link, a room's metadata
// is held by the frame proxy and the transfer workers are paused holding
// another room's chunk. Afterwards no toxic, held frame or paused gate
// remains (both parked requests complete with the model's answers), Reset
// finds nothing to do, Network.Close leaves no proxy, and fresh traffic
// reaches the engine directly and is answered exactly.
func TestInterruptedPlayLeavesNothing(t *testing.T) {
	for _, how := range []string{"cancel", "panic-onstart", "panic-onend"} {
		t.Run(how, func(t *testing.T) {
			testkit.NoLeaks(t)
			c := testcluster.Start(t, contract.EngineConfig{})
			n := newNetwork(t)

			const heldRoom, pausedRoom = uint64(7001), uint64(7002)
			toxic := &network.Latency{Net: n, Link: "kv/0", Stream: network.Upstream, Delay: 50 * time.Millisecond}
			hold := &protocol.AbortBeforeMetadata{Link: "control/0", Rooms: []uint64{heldRoom}}
			pause := &faults.PauseTransferWorkers{Rank: -1, Worker: -1}
			entries := []schedule.Entry{
				{Fault: toxic, For: schedule.Fixed(time.Hour)},
				{Fault: hold, For: schedule.Fixed(time.Hour)},
				{Fault: pause, For: schedule.Fixed(time.Hour)},
			}
			var short faults.Fault
			if how == "panic-onend" {
				// A short window whose end (and OnEnd) comes while the others are on.
				short = &network.Latency{Net: n, Link: "router-prefill", Delay: time.Millisecond}
				entries = append(entries, schedule.Entry{Fault: short, For: schedule.Fixed(200 * time.Millisecond)})
			}
			tl, err := schedule.Plan(42, entries, 2*time.Hour)
			if err != nil {
				t.Fatal(err)
			}

			type answer struct {
				room uint64
				err  error
			}
			var parked []<-chan answer
			send := func(room uint64) {
				text := longText(fmt.Sprintf("interrupt-%d", room))
				ch, _ := testkit.Async(t, func(ctx context.Context) answer {
					got, err := testkit.Generate(ctx, c.Endpoint(), fmt.Sprintf("int-%d", room), room, text, 8)
					if err == nil && got != model.Expected(text, 8) {
						err = fmt.Errorf("answer %q, want %q", got, model.Expected(text, 8))
					}
					return answer{room, err}
				})
				parked = append(parked, ch)
			}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			started := 0
			p := &schedule.Player{Target: c, Timeline: tl}
			p.OnStart = func(schedule.Record) {
				started++
				if started < len(entries) {
					return
				}
				// Every fault is on: park one request at each and wait until
				// the faults visibly hold them.
				send(heldRoom)
				send(pausedRoom)
				_, err := testkit.Poll(t.Context(), 10*time.Second, func() error {
					if got := hold.Evidence().Counters["held"]; got < 1 {
						return fmt.Errorf("metadata of room %d not held yet", heldRoom)
					}
					if held, _, err := heldAt(t.Context(), c, contract.HookTransferWorkers, "prefill"); err != nil || held < 1 {
						return fmt.Errorf("no transfer worker holds a chunk yet (%v)", err)
					}
					if tx := n.Toxics()["kv/0"]; len(tx) != 1 {
						return fmt.Errorf("toxics on kv/0: %v", tx)
					}
					return nil
				})
				if err != nil {
					t.Errorf("faults not in effect: %v", err)
				}
				switch how {
				case "cancel":
					cancel()
				case "panic-onstart":
					panic("checker failed mid-fault")
				}
			}
			p.OnEnd = func(r schedule.Record) {
				if how == "panic-onend" {
					panic("checker failed at " + r.Fault)
				}
			}

			var records []schedule.Record
			recovered := func() (r any) {
				defer func() { r = recover() }()
				records, err = p.Play(ctx, time.Now())
				return nil
			}()
			if wantPanic := how != "cancel"; (recovered != nil) != wantPanic {
				t.Fatalf("recovered %v, want a panic: %v", recovered, wantPanic)
			}
			if how == "cancel" {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("play: %v, want canceled", err)
				}
				if len(records) != len(entries) {
					t.Errorf("%d records, want %d", len(records), len(entries))
				}
				for _, r := range records {
					if !r.Applied || r.End < r.Start || r.Error != "" {
						t.Errorf("record not healed cleanly: %+v", r)
					}
				}
			}
			if started != len(entries) {
				t.Fatalf("%d of %d faults started", started, len(entries))
			}

			// Nothing is left on: no toxic, no closed gate, no held frame.
			noToxics(t, n)
			noPausedGate(t, c)
			if ev := hold.Evidence(); ev.Counters["held"] < 1 || ev.Counters["released"] != ev.Counters["held"] {
				t.Errorf("held frames not all released: %v", ev.Counters)
			}
			if !pause.Evidence().Effective {
				t.Errorf("pause evidence: %+v", pause.Evidence())
			}
			for _, ch := range parked {
				if a := testkit.Recv(t, ch, 15*time.Second); a.err != nil {
					t.Errorf("request parked in room %d during the fault: %v", a.room, a.err)
				}
			}
			if err := faults.Reset(t.Context(), c); err != nil {
				t.Errorf("reset: %v", err)
			}

			// Close gives every link back: with the proxies and relays gone,
			// traffic that still went through them would fail.
			if err := n.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if px := n.Proxies(); len(px) != 0 {
				t.Errorf("proxies left after close: %v", px)
			}
			before := hold.Evidence().Counters
			healthyAfter(t, c, 10*time.Second)
			if after := hold.Evidence().Counters; after["conns"] != before["conns"] || after["seen_metadata"] != before["seen_metadata"] {
				t.Errorf("control traffic still reaches the frame proxy: %v -> %v", before, after)
			}
		})
	}
}
