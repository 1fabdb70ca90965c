package record

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// staleEngine serves a /metrics whose decode transfer gauge is stuck at 17
// (logged before traffic stopped) and, unless loads is empty, a /v1/loads
// answer: the live queues.
func staleEngine(t *testing.T, loads string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		for _, g := range contract.SlotGauges() {
			v := 0
			if g == contract.MetricDecodeTransferQueue {
				v = 17
			}
			fmt.Fprintf(w, "# TYPE %s gauge\n%s{engine_type=\"decode\",tp_rank=\"0\"} %d\n", g, g, v)
		}
	})
	if loads != "" {
		mux.HandleFunc("GET "+contract.PathLoads, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("include") != "disagg" {
				http.Error(w, "want include=disagg", http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, loads)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + contract.PathMetrics
}

type urls []string

func (u urls) MetricsURLs() []string { return u }
func (u urls) EngineURLs() []string  { return nil }

func newLog(t *testing.T) *EventLog {
	t.Helper()
	l, err := NewEventLog(filepath.Join(t.TempDir(), "events.jsonl"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// With LiveLoads the recorder judges by /v1/loads: the stale gauge is
// replaced by the live 0 (kept in Logged) and the engine reads settled;
// without, the stale 17 reads busy; loads that fail or lack the PD section
// fail the scrape instead of passing stale gauges.
func TestRecorderLiveLoads(t *testing.T) {
	live := `{"dp_rank_count":1,"loads":[{"dp_rank":0,"num_running_reqs":0,"num_waiting_reqs":0,` +
		`"disaggregation":{"mode":"decode","decode_transfer_queue_reqs":0}}]}`
	for _, tc := range []struct {
		name, loads string
		liveLoads   bool
		settled     bool
		err         string
	}{
		{"live loads", live, true, true, ""},
		{"stale gauges", live, false, false, ""},
		{"no loads endpoint", "", true, false, "live loads"},
		{"no disagg section", `{"loads":[{"dp_rank":0}]}`, true, false, "no disaggregation section"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := staleEngine(t, tc.loads)
			r := &Recorder{Target: urls{u}, Log: newLog(t), LiveLoads: tc.liveLoads}
			defer r.Close()
			r.Once(t.Context())
			s := r.Latest()[u]
			settled, ok, busy := r.Settled(0)
			if !ok || settled != tc.settled {
				t.Fatalf("settled %v (ok %v, busy %q), want %v", settled, ok, busy, tc.settled)
			}
			if tc.err != "" {
				if !strings.Contains(s.Err, tc.err) {
					t.Fatalf("scrape error %q, want one naming %q", s.Err, tc.err)
				}
				return
			}
			if !tc.liveLoads {
				if !strings.Contains(busy, contract.MetricDecodeTransferQueue+"=17") || s.Logged != nil {
					t.Fatalf("stale gauges: busy %q, logged %v", busy, s.Logged)
				}
				return
			}
			if s.Logged[contract.MetricDecodeTransferQueue] != 17 || s.Gauges[contract.MetricDecodeTransferQueue] != 0 ||
				s.Ranks[contract.MetricDecodeTransferQueue]["dp_rank=0"] != 0 || len(s.Ranks[contract.MetricDecodeTransferQueue]) != 1 {
				t.Fatalf("overlay: gauges %v ranks %v logged %v", s.Gauges, s.Ranks[contract.MetricDecodeTransferQueue], s.Logged)
			}
		})
	}
}
