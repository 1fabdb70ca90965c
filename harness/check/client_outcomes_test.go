package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// An error that reached the client as a broken answer (a reset, a cut
// stream, a body that is no error) fails client-outcomes on pdchaos's own
// router unless a fault on the client's link or on the router overlapped
// it; well-formed errors pass, and an external router's broken answers are
// counted, not judged.
func TestClientOutcomesBrokenAnswers(t *testing.T) {
	t.Parallel()
	s := time.Second
	ok := outcome.Outcome{Kind: outcome.KindCompleted, Agent: 1, Start: 1 * s, End: 2 * s}
	broken := func(f outcome.Failure) outcome.Outcome {
		return outcome.Outcome{Kind: outcome.KindError, Agent: 2, Turn: 3, Room: 7, Start: 4 * s, End: 5 * s, Failure: f, Message: "read stream: unexpected EOF"}
	}
	fault := func(name string, layer faults.Layer, from, to time.Duration) schedule.Record {
		return schedule.Record{Fault: name, Layer: layer, Applied: true, Start: from, End: to}
	}
	own := RunInfo{Target: "bundled", Engine: &contract.EngineConfig{}}
	for _, tc := range []struct {
		name   string
		run    RunInfo
		o      outcome.Outcome
		faults []schedule.Record
		want   Status
		ev     string // evidence key that must be 1
	}{
		{"well-formed http error", own, broken(outcome.FailureHTTP), nil, Pass, ""},
		{"error event", own, broken(outcome.FailureErrorEvent), nil, Pass, ""},
		{"unclassified (older log)", own, broken(""), nil, Pass, ""},
		{"reset, no fault", own, broken(outcome.FailureTransport), nil, Fail, "broken_answers"},
		{"truncated, no fault", own, broken(outcome.FailureTruncated), nil, Fail, "broken_answers"},
		{"bad body, no fault", own, broken(outcome.FailureBadBody), nil, Fail, "broken_answers"},
		{"bad event, no fault", own, broken(outcome.FailureBadEvent), nil, Fail, "broken_answers"},
		{"reset while decode was killed", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("sigkill(decode,restart)", faults.LayerProcess, 3*s, 6*s)}, Fail, "broken_answers"},
		{"reset under a client-router toxic", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("reset_peer(client-router,down 0s)", faults.LayerNetwork, 3*s, 0)}, Pass, "broken_answers_faulted"},
		{"cut while the router was stopped, just after", own, broken(outcome.FailureTruncated),
			[]schedule.Record{fault("sigstop(router)", faults.LayerProcess, 1*s, 3500*time.Millisecond)}, Pass, "broken_answers_faulted"},
		{"router fault long before", own, broken(outcome.FailureTransport),
			[]schedule.Record{fault("sigstop(router)", faults.LayerProcess, 0, 2*s)}, Fail, "broken_answers"},
		{"external router", RunInfo{Target: "external"}, broken(outcome.FailureTransport), nil, Pass, "broken_answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := &View{Run: tc.run, Outcomes: []outcome.Outcome{ok, tc.o}, Faults: tc.faults}
			r := checkClientOutcomes(v)
			if r.Status != tc.want {
				t.Fatalf("%s (%s), want %s", r.Status, r.Summary, tc.want)
			}
			if tc.ev != "" && r.Evidence[tc.ev] != 1 {
				t.Errorf("evidence %v: want %s = 1", r.Evidence, tc.ev)
			}
			if tc.want == Fail && !strings.Contains(r.Summary, string(tc.o.Failure)) {
				t.Errorf("summary %q does not name the failure %q", r.Summary, tc.o.Failure)
			}
		})
	}
}
