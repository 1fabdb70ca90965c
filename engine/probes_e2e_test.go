package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// probeSeries reads MetricProbeHits at url: probe name → value.
func probeSeries(t *testing.T, url string) map[string]float64 {
	t.Helper()
	fams, err := testkit.Scrape(t.Context(), url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	out := map[string]float64{}
	for _, m := range fams[contract.MetricProbeHits].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == contract.LabelProbe {
				out[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestProbesReportCancelledRequest: a client that goes away mid-answer
// moves the decode and router probes of that branch, and every role
// reports every one of its probes, zero ones too, on /metrics and
// /debug/probes.
func TestProbesReportCancelledRequest(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{DecodeTokensPerSec: 50})
	prefillURL, decodeURL := c.EngineURLs()[0], c.EngineURLs()[1]
	routerURL := "http://" + c.Router.Addr()

	// A clean request first: no probe moves.
	if r := testkit.Chat(t.Context(), c.Endpoint(), prompt(1), 8); r.Err != nil {
		t.Fatalf("clean request: %v", r.Err)
	}
	for _, base := range []string{prefillURL, decodeURL, routerURL} {
		got, err := testkit.Probes(t.Context(), base)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Probes {
			// Decode's TransferInfo may beat prefill's request: a legal
			// ordering the probe marks, not a failure.
			if p.Hits != 0 && p.Name != "prefill/metadata-before-request" {
				t.Errorf("%s: probe %s hit %d times by a clean request", got.Role, p.Name, p.Hits)
			}
		}
	}

	streamThenCancel(t, c.Endpoint(), prompt(2), 200, 3)
	testkit.Eventually(t, 10*time.Second, func() error {
		got, err := testkit.Probes(t.Context(), decodeURL)
		if err != nil {
			return err
		}
		hits := map[string]int64{}
		for _, p := range got.Probes {
			hits[p.Name] = p.Hits
		}
		for _, want := range []string{"decode/client-gone", "decode/abort", "decode/abort-while-running"} {
			if hits[want] == 0 {
				return fmt.Errorf("decode probe %s not hit yet: %v", want, got.Probes)
			}
		}
		return nil
	})
	series := probeSeries(t, c.MetricsURLs()[1])
	if series["decode/client-gone"] < 1 || series["decode/abort-while-running"] < 1 {
		t.Errorf("decode /metrics: client-gone=%v abort-while-running=%v, want ≥ 1", series["decode/client-gone"], series["decode/abort-while-running"])
	}

	for _, tc := range []struct {
		side, base, metrics string
	}{
		{contract.SidePrefill, prefillURL, c.MetricsURLs()[0]},
		{contract.SideDecode, decodeURL, c.MetricsURLs()[1]},
		{contract.SideRouter, routerURL, routerURL + contract.PathMetrics},
	} {
		want := contract.ProbesOf(tc.side)
		got, err := testkit.Probes(t.Context(), tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if got.Role != tc.side || len(got.Probes) != len(want) {
			t.Errorf("%s /debug/probes: role %q, %d probes, want %d", tc.side, got.Role, len(got.Probes), len(want))
		}
		// Prefill and decode say what their histories wrote (the cancelled
		// request's status events at least); the router keeps none.
		if hasHistory := tc.side != contract.SideRouter; hasHistory != (got.Recorded[contract.RoomEventStatus] > 0) {
			t.Errorf("%s /debug/probes: recorded %v, want status events only where the role keeps a room history", tc.side, got.Recorded)
		}
		if s := probeSeries(t, tc.metrics); len(s) != len(want) {
			t.Errorf("%s /metrics: %d probe series, want %d (zero ones too)", tc.side, len(s), len(want))
		}
	}
}
