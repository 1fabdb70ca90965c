package check

import (
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestUnreachableBranchesByRegression: a Never probe fails a fixed-engine
// run only, a regression's branch fails a run without that regression,
// and a target that reports no probes is skipped, not passed.
func TestUnreachableBranchesByRegression(t *testing.T) {
	t.Parallel()
	view := func(regs []string, hits map[string]int64, probeErr string) *View {
		v := NewView(nil)
		v.Run.Engine = &contract.EngineConfig{Regressions: regs}
		v.CodeProbes["prefill"] = CodeProbes{Role: "prefill", Hits: hits, Err: probeErr}
		return v
	}
	for _, tc := range []struct {
		name string
		regs []string
		hits map[string]int64
		err  string
		want Status
	}{
		{"fixed engine, nothing unexpected", nil, map[string]int64{"prefill/abort-held-room": 4, "prefill/orphan-status-swept": 0}, "", Pass},
		{"fixed engine, a Never probe", nil, map[string]int64{"prefill/orphan-status-swept": 1}, "", Fail},
		{"a regression on excuses a Never probe", []string{contract.AbortBeforeStatus}, map[string]int64{"decode/status-unexpected": 2}, "", Pass},
		{"a regression's branch with it on", []string{contract.UnknownRoomWaiting}, map[string]int64{"prefill/no-transfer-info": 2}, "", Pass},
		{"a regression's branch with another on", []string{contract.AbortBeforeStatus}, map[string]int64{"prefill/no-transfer-info": 2}, "", Fail},
		{"fixed engine, a regression's branch", nil, map[string]int64{"prefill/transfer-error-clears": 1}, "", Fail},
		{"no probes reported", nil, nil, "GET /debug/probes: 404", Skip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := checkUnreachableBranches(view(tc.regs, tc.hits, tc.err))
			if c.Status != tc.want {
				t.Fatalf("%s (%s), want %s", c.Status, c.Summary, tc.want)
			}
		})
	}
}
