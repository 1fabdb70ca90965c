package contract_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// TestBackstopTable: every backstop names a duration field of EngineConfig
// by its YAML key, a probe of its own role, states that exist, and an
// event; the four deadlines the engine has are all there, once.
func TestBackstopTable(t *testing.T) {
	t.Parallel()
	durations := map[string]bool{}
	rt := reflect.TypeOf(contract.EngineConfig{})
	for i := range rt.NumField() {
		if f := rt.Field(i); f.Type == reflect.TypeOf(time.Duration(0)) {
			durations[f.Tag.Get("yaml")] = true
		}
	}
	states := []string{contract.StateFailed, contract.StateBootstrapping, contract.StateWaitingForInput, contract.StateTransferring, contract.StateSuccess}
	cfg, _, err := contract.EngineConfig{BootstrapTimeout: 1 * time.Second, InflightTimeout: 2 * time.Second,
		WaitingTimeout: 3 * time.Second, AckTimeout: 4 * time.Second}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadlines := map[time.Duration]bool{}
	for _, b := range contract.Backstops() {
		if seen[b.Name] {
			t.Errorf("backstop %s listed twice", b.Name)
		}
		seen[b.Name] = true
		if !durations[b.Config] {
			t.Errorf("backstop %s: config %q is no duration field of EngineConfig", b.Name, b.Config)
		}
		deadlines[b.Deadline(cfg)] = true
		if p := b.Probe.String(); p != b.Role+"/"+b.Name && p != b.Role+"/"+b.Name+"-free" {
			t.Errorf("backstop %s: probe %s is not its own", b.Name, p)
		}
		for _, s := range b.States {
			if !slices.Contains(states, s) {
				t.Errorf("backstop %s: unknown state %q", b.Name, s)
			}
		}
		if b.Kind == "" || b.Detail == "" || b.Clock == "" || len(b.States) == 0 {
			t.Errorf("backstop %s: kind, detail, clock and states must be set: %+v", b.Name, b)
		}
		if got := contract.LookupBackstop(b.Name); got.Name != b.Name {
			t.Errorf("LookupBackstop(%s) = %+v", b.Name, got)
		}
	}
	for _, n := range []string{contract.BackstopBootstrap, contract.BackstopInflight, contract.BackstopWaiting, contract.BackstopAck, contract.BackstopAbortResend} {
		if !seen[n] {
			t.Errorf("backstop %s missing from the table", n)
		}
	}
	if len(deadlines) != 4 {
		t.Errorf("the four backstops read %d distinct deadlines from four distinct settings", len(deadlines))
	}
	if b := contract.LookupBackstop("nope"); b.Name != "" {
		t.Errorf("LookupBackstop(nope) = %+v, want zero", b)
	}
}

// TestBackstopFiredBy: a backstop recognises its own event and no other
// (another side's, another reason, a non-failing status, a note's detail
// changed).
func TestBackstopFiredBy(t *testing.T) {
	t.Parallel()
	boot := contract.LookupBackstop(contract.BackstopBootstrap)
	ack := contract.LookupBackstop(contract.BackstopAck)
	wait := contract.LookupBackstop(contract.BackstopWaiting)
	ev := func(side, kind, state, detail string) contract.Event {
		return contract.Event{Side: side, Kind: kind, State: state, Detail: detail}
	}
	for _, tc := range []struct {
		name string
		b    contract.Backstop
		e    contract.Event
		want bool
	}{
		{"bootstrap fires", boot, ev("prefill", "status", contract.StateFailed, "scheduler: bootstrap timeout"), true},
		{"bootstrap on decode", boot, ev("decode", "status", contract.StateFailed, "scheduler: bootstrap timeout"), false},
		{"another reason", boot, ev("prefill", "status", contract.StateFailed, "scheduler: local abort rid=1"), false},
		{"reason inside another", boot, ev("prefill", "status", contract.StateFailed, "receiver: prefill reported failure: bootstrap timeout"), false},
		{"not failed", boot, ev("prefill", "status", contract.StateWaitingForInput, "scheduler: bootstrap timeout"), false},
		{"waiting fires", wait, ev("decode", "status", contract.StateFailed, "receiver: waiting timeout"), true},
		{"waiting's clear is no fire", wait, ev("decode", "clear", contract.StateFailed, "waiting timeout: timed out waiting for kv transfer"), false},
		{"ack fires", ack, ev("decode", "ack-timeout", contract.StateCleared, "freeing pages without prefill's ACK"), true},
		{"ack with an older detail", ack, ev("decode", "ack-timeout", contract.StateCleared, "no ABORT_ACK after 2 resends"), true},
		{"ack kind on prefill", ack, ev("prefill", "ack-timeout", contract.StateCleared, "freeing pages without prefill's ACK"), false},
	} {
		if got := tc.b.FiredBy(tc.e); got != tc.want {
			t.Errorf("%s: FiredBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStateDeadlines: every bound names backstops of its own role and adds
// their deadlines.
func TestStateDeadlines(t *testing.T) {
	t.Parallel()
	cfg, _, err := contract.EngineConfig{BootstrapTimeout: time.Second, InflightTimeout: 2 * time.Second, WaitingTimeout: 3 * time.Second}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"prefill/Bootstrapping": time.Second, "prefill/WaitingForInput": 3 * time.Second,
		"prefill/Transferring": 2 * time.Second, "decode/WaitingForInput": 3 * time.Second, "decode/Transferring": 3 * time.Second}
	got := map[string]time.Duration{}
	for _, s := range contract.StateDeadlines() {
		for _, n := range s.Backstops {
			if b := contract.LookupBackstop(n); b.Role != s.Role {
				t.Errorf("%s/%s: backstop %q is not one of %s's", s.Role, s.State, n, s.Role)
			}
		}
		got[s.Role+"/"+s.State] = s.Bound(cfg)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("bounds %v, want %v", got, want)
	}
	if m := contract.StateMargin(cfg); m != 2*time.Second+10*time.Millisecond {
		t.Fatalf("margin %v, want 2.01s (2s and two 5ms check intervals)", m)
	}
}

func TestBackstopStartsClock(t *testing.T) {
	t.Parallel()
	boot := contract.LookupBackstop(contract.BackstopBootstrap)
	wait := contract.LookupBackstop(contract.BackstopWaiting)
	ack := contract.LookupBackstop(contract.BackstopAck)
	ev := func(side, kind, state, detail string) contract.Event {
		return contract.Event{Side: side, Kind: kind, State: state, Detail: detail}
	}
	created := "sender " + contract.CreatedFor("r1")
	for _, tc := range []struct {
		name string
		b    contract.Backstop
		e    contract.Event
		want bool
	}{
		{"prefill's request opens the room", boot, ev("prefill", "status", contract.StateBootstrapping, "sender: "+created), true},
		{"prefill's request finds the room decode opened", boot, ev("prefill", contract.RoomEventRequest, "", created), true},
		{"prefill's room opened by TransferInfo", boot, ev("prefill", "status", contract.StateWaitingForInput, "receiver: transfer info"), false},
		{"a creation on decode", boot, ev("decode", "status", contract.StateBootstrapping, created), false},
		{"decode sends its metadata", wait, ev("decode", contract.RoomEventMetadataSent, "", "4 pages per rank"), true},
		{"metadata on prefill", wait, ev("prefill", contract.RoomEventMetadataSent, "", ""), false},
		{"the ACK clock is not judged", ack, ev("decode", "abort-sent", "", "ABORT to prefill"), false},
	} {
		if got := tc.b.StartsClock(tc.e); got != tc.want {
			t.Errorf("%s: StartsClock = %v, want %v", tc.name, got, tc.want)
		}
	}
}
