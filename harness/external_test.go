package harness

import (
	"context"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
)

// TestExternalOnProcs is must-show 3: the engine runs as three processes
// and the harness reaches it through the external target, by URL only (no
// /debug/rooms, no hooks). slots-released, liveness and client-outcomes
// still judge: pass on the fixed engine, fail on bootstrap-thread-death and
// decode-abort-leak.
func TestExternalOnProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engine processes")
	}
	for _, tc := range []struct {
		regression string
		fail       string
	}{
		{"", ""},
		{"bootstrap-thread-death", contract.CheckLiveness},
		{"decode-abort-leak", contract.CheckSlotsReleased},
	} {
		t.Run("regression="+tc.regression, func(t *testing.T) {
			sc := preset(t, "abort-storm")
			cfg := sc.Engine
			if tc.regression != "" {
				cfg.Regressions = []string{tc.regression}
			}
			procs, err := target.StartProcs(t.Context(), pdchaosBin, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := procs.Close(ctx); err != nil {
					t.Error(err)
				}
			})
			ext := &target.External{Router: procs.Endpoint(), Metrics: procs.MetricsURLs()}
			res, err := Run(t.Context(), RunOptions{Scenario: sc, Seed: 5, ResultsDir: t.TempDir(), Source: target.ExternalSource{Target: ext}})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{contract.CheckSlotsReleased, contract.CheckLiveness, contract.CheckClientOutcomes} {
				c, _ := res.Checks.Get(n)
				want := check.Pass
				if n == tc.fail {
					want = check.Fail
				}
				if c.Status != want && !(tc.fail != "" && c.Status == check.Fail) {
					t.Errorf("%s: %s (%s), want %s", n, c.Status, c.Summary, want)
				}
			}
			if c, _ := res.Checks.Get(contract.CheckRoomsTerminal); c.Status != check.Skip {
				t.Errorf("rooms-terminal: %s, want skip on a URL-only target", c.Status)
			}
			want := check.Pass
			if tc.fail != "" {
				want = check.Fail
			}
			if res.Verdict != want {
				t.Fatalf("verdict %s, want %s: %v", res.Verdict, want, res.Err())
			}
		})
	}
}
