package core

import (
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// Each ordering of a request's events at the router, the actions Legs
// asks for and the probes it counts: the live router and the simulator
// both carry out exactly these.
func TestLegsDecideWhoseAnswerAndWhichLegToCancel(t *testing.T) {
	type step struct {
		ev   func(l *Legs) (bool, LegAction)
		want bool
		act  LegAction
	}
	prefill := func(status int) func(*Legs) (bool, LegAction) {
		return func(l *Legs) (bool, LegAction) { return l.PrefillAnswered(status) }
	}
	decode := func(status int) func(*Legs) (bool, LegAction) {
		return func(l *Legs) (bool, LegAction) { return l.DecodeAnswered(status) }
	}
	gone := func(mid bool) func(*Legs) (bool, LegAction) {
		return func(l *Legs) (bool, LegAction) { return false, l.ClientGone(mid) }
	}
	answered := func(l *Legs) (bool, LegAction) { return false, l.Answered() }
	both := LegAction{CancelPrefill: true, CancelDecode: true}
	cases := []struct {
		name   string
		steps  []step
		probes map[contract.ProbeID]int64
	}{
		{"served", []step{{decode(200), false, LegAction{}}, {answered, false, LegAction{CancelDecode: true}}, {prefill(200), false, LegAction{}}},
			nil},
		{"prefill refuses first: its answer, decode cancelled", []step{{prefill(400), true, LegAction{CancelDecode: true}}, {decode(0), true, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterPrefillFailed: 1, contract.ProbeRouterPrefillRefused: 1}},
		{"prefill refuses after decode's head: decode's answer", []step{{decode(200), false, LegAction{}}, {prefill(400), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterPrefillFailed: 1}},
		{"prefill refuses after the client left: nothing to answer", []step{{gone(false), false, both}, {prefill(400), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterClientLeftEarly: 1, contract.ProbeRouterPrefillFailed: 1}},
		{"decode refuses: prefill cancelled", []step{{decode(400), false, LegAction{CancelPrefill: true}}, {prefill(0), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterDecodeRefused: 1, contract.ProbeRouterPrefillFailed: 1}},
		{"decode fails", []step{{decode(0), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterDecodeFailed: 1}},
		{"decode's leg ended by the client leaving is not decode failing", []step{{gone(false), false, both}, {decode(0), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterClientLeftEarly: 1}},
		{"client leaves mid-answer while prefill runs", []step{{decode(200), false, LegAction{}}, {gone(true), false, both}, {gone(true), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterClientLeftEarly: 1, contract.ProbeRouterClientLeftMidAnswer: 1}},
		{"client leaves after prefill answered: no early-leave", []step{{prefill(200), false, LegAction{}}, {decode(200), false, LegAction{}}, {gone(true), false, LegAction{CancelDecode: true}}},
			nil},
		{"a leg answers once", []step{{prefill(500), false, LegAction{}}, {prefill(400), false, LegAction{}}, {decode(400), false, LegAction{CancelPrefill: true}}, {decode(0), false, LegAction{}}},
			map[contract.ProbeID]int64{contract.ProbeRouterPrefillFailed: 1, contract.ProbeRouterDecodeRefused: 1}},
		{"answered, then the connection closes: nothing more", []step{{decode(200), false, LegAction{}}, {answered, false, LegAction{CancelDecode: true}}, {gone(false), false, LegAction{}}},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pc ProbeCounts
			l := NewLegs(&pc)
			for i, s := range tc.steps {
				got, act := s.ev(l)
				if got != s.want || act != s.act {
					t.Errorf("step %d: got (%v, %+v), want (%v, %+v)", i, got, act, s.want, s.act)
				}
			}
			for _, p := range contract.Probes() {
				if p.Side != contract.SideRouter {
					continue
				}
				if n := pc.Count(p.ID); n != tc.probes[p.ID] {
					t.Errorf("probe %s hit %d times, want %d", p.Name, n, tc.probes[p.ID])
				}
			}
		})
	}
}

func TestLegsJudgeTheStream(t *testing.T) {
	var pc ProbeCounts
	l := NewLegs(&pc)
	if _, ok := l.Event([]byte("this is not json")); ok {
		t.Error("an event that is not JSON was taken")
	}
	if ev, ok := l.Event([]byte(`{"text":"ab","meta_info":{"id":"x","completion_tokens":2}}`)); !ok || ev.Text != "ab" || ev.MetaInfo.CompletionTokens != 2 || ev.Error != nil {
		t.Errorf("a text event read as %+v (ok %v)", ev, ok)
	}
	l.DecodeError(false)
	if ev, ok := l.Event([]byte(`{"error":{"message":"boom","code":500}}`)); !ok || ev.Error == nil || ev.Error.Message != "boom" {
		t.Errorf("an error event read as %+v (ok %v)", ev, ok)
	}
	for _, c := range []struct {
		finished, errored, early bool
	}{{true, false, false}, {false, true, false}, {false, false, true}} {
		if got := l.StreamEnded(c.finished, c.errored); got != c.early {
			t.Errorf("StreamEnded(%v, %v) = %v, want %v", c.finished, c.errored, got, c.early)
		}
	}
	l.ClientGone(true)
	if l.StreamEnded(false, false) {
		t.Error("a stream cut by the client leaving counted as ended early")
	}
	for id, want := range map[contract.ProbeID]int64{contract.ProbeRouterBadEvent: 1, contract.ProbeRouterDecodeErrorStatus: 1,
		contract.ProbeRouterUpstreamError: 1, contract.ProbeRouterStreamEndedEarly: 1} {
		if n := pc.Count(id); n != want {
			t.Errorf("probe %d hit %d times, want %d", id, n, want)
		}
	}
}
