package faults

import "testing"

func TestReadName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Named
	}{
		{"stall-scheduler(decode/0)", Named{Kind: "stall-scheduler", Role: "decode"}},
		{"pause-transfer-writes(prefill/-1/worker=2)", Named{Kind: "pause-transfer-writes", Role: "prefill"}},
		{StopName("prefill"), Named{Kind: "sigstop", Role: "prefill"}},
		{KillName("decode", true), Named{Kind: "sigkill", Role: "decode"}},
		{"drop(notify/0,status)", Named{Kind: "drop", Link: "notify/0"}},
		{"latency(router-prefill,down 50ms)", Named{Kind: "latency", Link: "router-prefill"}},
		{"latency@client-router", Named{Kind: "latency", Link: "client-router"}},
		{"reset_peer(router-decode,…)", Named{Kind: "reset_peer", Link: "router-decode"}},
		{"latency(somewhere,1s)", Named{Kind: "latency"}},
		{"drop-messages@kv/1", Named{Kind: "drop-messages", Link: "kv/1"}},
		{"pause-transfer-workers", Named{Kind: "pause-transfer-workers"}},
		{"sigstop", Named{Kind: "sigstop"}},
		{"", Named{}},
	} {
		if got := ReadName(tc.name); got != tc.want {
			t.Errorf("ReadName(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestEffects pins the table's rows the checkers depend on: one wrong bit
// there excuses a real wedge or fails a fixed engine.
func TestEffects(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Effect
		want bool
	}{
		{"stall-scheduler(prefill/0)", StopsDeadlines, true},
		{"stall-bootstrap-loop(prefill/0)", StopsDeadlines, false},
		{"stall-bootstrap-loop(prefill/0)", HoldsMetadata, true},
		{"pause-transfer-workers(prefill/0/worker=-1)", HoldsPostedWrites, false},
		{"pause-transfer-writes(prefill/0/worker=-1)", HoldsPostedWrites, true},
		{StopName("decode"), StopsDeadlines, true},
		{StopName("decode"), EndsProcess, false},
		{KillName("prefill", false), EndsProcess, true},
		{"drop(notify/0,status)", HoldsMetadata, false}, // a link fault's reach follows from its link
		{"no-such-kind(decode/0)", StopsDeadlines, false},
	} {
		if got := ReadName(tc.name).Can(tc.e); got != tc.want {
			t.Errorf("ReadName(%q).Can(%d) = %v, want %v", tc.name, tc.e, got, tc.want)
		}
	}
}
