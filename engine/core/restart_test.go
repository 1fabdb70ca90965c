package core

import (
	"fmt"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// TestMooncakeRestartedDecodeFence restarts decode on Mooncake while
// prefill still owes the old process's room its KV. The new process has
// the same session_id (its KV address) and hands the same pages to its own
// request. Its registration announces new buffers (kv_ptrs), so the old
// room's writes, filed under the old registration, are refused and only
// the new room's land. With the buffers' address unchanged (what the
// engine did before the fence) the old writes land in the new room's
// pages: the case shows the test can see the corruption it guards against.
func TestMooncakeRestartedDecodeFence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		newBase  bool
		wantFail bool // prefill fails the old room instead of writing it
	}{
		{"new buffers", true, true},
		{"same buffers", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: contract.WireMooncake})
			r.add("old", 11, prompt(1, 40), 4)
			r.stepD()
			r.deliverControl()
			r.stepP() // forwarded: the old room's chunks wait in its worker's queue
			if b, w, i := r.p.QueueLens(); b+w != 0 || i != 1 {
				t.Fatalf("prefill queues before the restart: bootstrap %d waiting %d inflight %d, want the room inflight", b, w, i)
			}

			restartDecode(r, tc.newBase)
			if got, want := r.p.DecodeRestarts, map[bool]int64{true: 1, false: 0}[tc.newBase]; got != want {
				t.Errorf("prefill counted %d decode restarts, want %d", got, want)
			}

			r.add("new", 22, prompt(2, 40), 4) // decode gives it the pages the old room had
			r.stepD()
			r.deliverControl()
			r.settle()

			if tc.wantFail {
				oldWritesRefused(t, r)
			} else if r.d.ForeignWrites == 0 {
				t.Fatal("with the buffers' address unchanged no old write landed in the new room's pages: the test cannot see the hazard")
			}
			if !tc.wantFail {
				return
			}
			if got, want := fmt.Sprint(r.answer["new"]), model.Expected(prompt(2, 40), 4); got != want {
				t.Errorf("new room's answer %q, want %q", got, want)
			}
		})
	}
}

// restartDecode replaces decode with a new process on the same addresses
// (its KV buffers mapped anew with newBase) and delivers its registration;
// the old process's rids are gone with it.
func restartDecode(r *rig, newBase bool) {
	r.t.Helper()
	old := r.d.Config().Agents[0]
	agent := DecodeAgent{IP: old.IP, NotifyPort: old.NotifyPort, Name: old.Name, KVAddr: old.KVAddr, KVBase: old.KVBase}
	if newBase {
		agent.KVBase += 1 << 12
	}
	r.dh = NewHistory(0)
	r.d = NewDecode(DecodeConfig{Ranks: 1, PageSize: 16, Pages: 256, WaitingTimeout: testTimeout, AckTimeout: testAckWait,
		Agents: []DecodeAgent{agent}, Wire: r.d.Config().Wire}, r.dh)
	for rid := range r.onD {
		delete(r.onD, rid)
	}
	if err := r.p.OnControl(r.now, 0, r.d.Registration(0, testBootstrap)); err != nil {
		r.t.Fatalf("new process's registration: %v", err)
	}
}

// mooncakeHeldTransferInfo: the old process's TransferInfo is held on the
// way (a proxy, a queue) and reaches prefill after the new process's
// registration, and after the new process gave the same pages to its own
// request. Prefill held the old request before the new registration, so
// the TransferInfo is refused rather than written into the new pages.
func mooncakeHeldTransferInfo(r *rig) {
	held := oldTransferInfoHeld(r, r.add)
	r.add("new", 22, prompt(2, 40), 4)
	r.stepD()
	r.deliverControl()
	r.ctl = held
	r.settle()
}

// TestMooncakeHeldTransferInfoRefused: no write of the dead process's room
// lands in the new one's pages, the new room's answer is whole, and
// prefill fails the old room.
func TestMooncakeHeldTransferInfoRefused(t *testing.T) {
	r := newRig(t, rigOpts{wire: contract.WireMooncake})
	mooncakeHeldTransferInfo(r)
	if r.d.ForeignWrites != 0 {
		t.Errorf("%d writes for the old process's room landed in the new one's pages", r.d.ForeignWrites)
	}
	if n := r.p.Probes().Count(contract.ProbePrefillMetadataFromPredecessor); n != 1 {
		t.Errorf("prefill refused %d TransferInfos as the predecessor's, want 1", n)
	}
	if errs := r.pfin["old"]; len(errs) != 1 || errs[0] == nil {
		t.Errorf("prefill finished the old room with %v, want one failure", errs)
	}
	if got, want := fmt.Sprint(r.answer["new"]), model.Expected(prompt(2, 40), 4); got != want {
		t.Errorf("new room's answer %q, want %q", got, want)
	}
}

// TestMooncakeHeldTransferInfoBeforeRequest: as mooncakeHeldTransferInfo,
// but prefill gets the old request only after the old process's
// TransferInfo (the router's request to prefill is late), so it held
// nothing to refuse when the new registration came. A runtime that tells
// prefill which connection each message came on (OnControlFrom) gets the
// old TransferInfo filed under the registration sent on its connection, the
// old buffers, which the new process refuses; without that (connection 0)
// the writes land in the new room's pages: the case shows the test can see
// the hazard.
func TestMooncakeHeldTransferInfoBeforeRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		viaConn bool
	}{
		{"via its connection", true},
		{"connection unknown", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: contract.WireMooncake})
			const oldConn, newConn = 1, 2
			conn := func(c uint64) uint64 {
				if tc.viaConn {
					return c
				}
				return 0
			}
			// The old process registers first on its connection, as the
			// bundled decode does on every new one.
			if err := r.p.OnControlFrom(r.now, 0, r.d.Registration(0, testBootstrap), conn(oldConn)); err != nil {
				t.Fatalf("old process's registration: %v", err)
			}
			held := oldTransferInfoHeld(r, r.addD)
			if err := r.p.OnControlFrom(r.now, 0, r.d.Registration(0, testBootstrap), conn(newConn)); err != nil {
				t.Fatalf("new process's registration on its connection: %v", err)
			}
			r.add("new", 22, prompt(2, 40), 4) // decode gives it the pages the old room had
			r.stepD()
			r.deliverControl()
			for _, o := range held {
				if err := r.p.OnControlFrom(r.now, o.Rank, o.Frames, conn(oldConn)); err != nil {
					t.Fatalf("old process's TransferInfo: %v", err)
				}
			}
			r.addP("old", 11, prompt(1, 40))
			r.settle()
			if !tc.viaConn {
				if r.d.ForeignWrites == 0 {
					t.Fatal("with the connection unknown no old write landed in the new room's pages: the test cannot see the hazard")
				}
				return
			}
			oldWritesRefused(t, r)
			if got, want := fmt.Sprint(r.answer["new"]), model.Expected(prompt(2, 40), 4); got != want {
				t.Errorf("new room's answer %q, want %q", got, want)
			}
		})
	}
}

// TestConnRegistrationsBounded: a peer dialling a new connection for every
// registration leaves at most maxConnRegs remembered, the newest.
func TestConnRegistrationsBounded(t *testing.T) {
	r := newRig(t, rigOpts{wire: contract.WireMooncake})
	reg := r.d.Registration(0, testBootstrap)
	for c := uint64(1); c <= maxConnRegs+10; c++ {
		if err := r.p.OnControlFrom(r.now, 0, reg, c); err != nil {
			t.Fatalf("registration on connection %d: %v", c, err)
		}
	}
	regs := r.p.ranks[0].connRegs
	if len(regs) != maxConnRegs {
		t.Fatalf("%d connections remembered, want %d", len(regs), maxConnRegs)
	}
	if _, ok := regs[10]; ok {
		t.Error("connection 10, among the oldest, is still remembered")
	}
	if _, ok := regs[maxConnRegs+10]; !ok {
		t.Error("the newest connection is not remembered")
	}
}

// oldWritesRefused: no write for the old process's room "old" landed in
// the new process's pages, some addressed to the old buffers were refused,
// and prefill failed the old room.
func oldWritesRefused(t *testing.T, r *rig) {
	t.Helper()
	if r.d.ForeignWrites != 0 {
		t.Errorf("%d writes for the old process's room landed in the new one's pages", r.d.ForeignWrites)
	}
	if n := r.d.Probes().Count(contract.ProbeDecodeChunkStaleAgent); n == 0 {
		t.Error("no write addressed to the old buffers was refused")
	}
	if errs := r.pfin["old"]; len(errs) != 1 || errs[0] == nil {
		t.Errorf("prefill finished the old room with %v, want one failure", errs)
	}
}

// oldTransferInfoHeld adds the old process's request for room 11 (with
// add: r.add, or r.addD for decode alone), holds back the control messages
// it sends (its TransferInfo, on the way), restarts decode with new
// buffers under the same name, and returns what it held.
func oldTransferInfoHeld(r *rig, add func(rid string, room uint64, prompt string, maxNew int)) []DecodeOut {
	add("old", 11, prompt(1, 40), 4)
	r.stepD()
	r.collect()
	held := r.ctl
	r.ctl = nil
	restartDecode(r, true)
	return held
}
