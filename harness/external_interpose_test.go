package harness

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/target"
)

// syncBuffer is a bytes.Buffer the interposer and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExternalInterposedOnProcs is must-show 3 with every protocol-fault
// layer: the engine runs as role processes in each wire dialect, its router
// pointed at pdchaos's /route rewriter as a user points SGLang's, and the
// harness reaches it by URL only (--target external --bootstrap …). The
// protocol-fault presets give the bundled target's verdicts: pass on the
// fixed engine, rooms-terminal fails on the regression each catches. On the
// fixed runs a second fault delays the prefill→decode notices (ABORT_ACK,
// status) on notify/0, effective by its evidence. Four runs of about 10 s:
// the rest of the matrix (each preset × dialect × regression) is the same
// code and was run by hand (see docs/sglang.md).
func TestExternalInterposedOnProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engine processes")
	}
	for _, tc := range []struct {
		wire       contract.Wire
		preset     string
		regression string
	}{
		{contract.WireNIXL, "abort-overtakes-metadata", ""},
		{contract.WireNIXL, "abort-overtakes-metadata", "abort-before-status"},
		{contract.WireMooncake, "late-registration", ""},
		{contract.WireMooncake, "late-registration", "unknown-room-waiting"},
	} {
		t.Run(string(tc.wire)+"/"+tc.preset+"/regression="+tc.regression, func(t *testing.T) {
			sc := preset(t, tc.preset)
			if tc.regression == "" {
				sc.Faults = append(sc.Faults, FaultSpec{Kind: "delay-messages", At: sc.Faults[0].At, For: sc.Faults[0].For,
					Params: map[string]any{"link": "notify/0", "kinds": []any{"ack", "status"}, "min": "20ms", "max": "200ms"}})
				if err := sc.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			cfg := sc.Engine
			cfg.Wire = tc.wire
			if tc.regression != "" {
				// Its rooms stay stuck for good: a short drain is enough
				// to see it, and keeps the test's wall time down.
				sc.Checks.DrainDeadline = 3 * time.Second
			}
			if tc.regression != "" {
				cfg.Regressions = []string{tc.regression}
			}
			// Bound first, so the router can be told the rewriter's address
			// before the target (which serves on it) opens.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			procs, err := target.StartProcsWith(t.Context(), pdchaosBin, cfg, target.ProcsOptions{RouterBootstrap: ln.Addr().String()})
			if err != nil {
				ln.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := procs.Close(ctx); err != nil {
					t.Error(err)
				}
			})
			var log syncBuffer
			ext := &target.External{Router: procs.Endpoint(), Metrics: procs.MetricsURLs(), Engines: procs.EngineURLs(),
				Bootstrap: procs.BootstrapURL(), RouteListener: ln, Log: &log}
			res, err := Run(t.Context(), RunOptions{Scenario: sc, Seed: 11, ResultsDir: t.TempDir(), Source: target.ExternalSource{Target: ext}, NoReport: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("interposer:\n%s", log.String())
			if !strings.Contains(log.String(), "decode went through pdchaos") {
				t.Errorf("the run did not see decode go through the rewriter:\n%s", log.String())
			}
			for _, f := range res.Faults {
				ev := f.Evidence
				t.Logf("fault %s: effective %v, counters %v", f.Fault, ev.Effective, ev.Counters)
				if !f.Applied || !ev.Effective {
					t.Errorf("fault %s: applied %v, effective %v (%s) %v", f.Fault, f.Applied, ev.Effective, ev.Detail, f.Error)
				}
				if ev.Counters["unknown"] != 0 {
					t.Errorf("fault %s: %d message(s) of unknown layout", f.Fault, ev.Counters["unknown"])
				}
				if strings.Contains(f.Fault, "notify/0") && ev.Counters["seen_ack"]+ev.Counters["seen_status"] == 0 {
					t.Errorf("fault %s on the prefill→decode direction saw no ABORT_ACK or status: %v", f.Fault, ev.Counters)
				}
			}
			rt, _ := res.Checks.Get(contract.CheckRoomsTerminal)
			if tc.regression == "" {
				if res.Verdict != check.Pass {
					t.Fatalf("fixed engine: verdict %s, want pass: %v", res.Verdict, res.Err())
				}
				return
			}
			if rt.Status != check.Fail || res.Verdict != check.Fail {
				t.Fatalf("%s: rooms-terminal %s (%s), verdict %s; want both fail", tc.regression, rt.Status, rt.Summary, res.Verdict)
			}
		})
	}
}
