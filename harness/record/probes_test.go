package record

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// TestFinalProbes logs one event per role: hits from a role that serves
// /debug/probes, an error from one that does not.
func TestFinalProbes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+contract.PathDebugProbes, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"role":"decode","probes":[{"name":"decode/abort","hits":3},{"name":"decode/ack-duplicate","hits":0}],"recorded":{"status":12,"stray-chunk":1}}`))
	})
	withProbes := httptest.NewServer(mux)
	defer withProbes.Close()
	without := httptest.NewServer(http.NotFoundHandler())
	defer without.Close()

	log, err := NewEventLog(filepath.Join(t.TempDir(), "events.jsonl"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{Log: log}
	defer r.Close()
	r.FinalProbes(t.Context(), []string{withProbes.URL, without.URL})
	v := check.NewView(log.Events())
	if got := v.CodeProbes[withProbes.URL]; got.Role != "decode" || got.Hits["decode/abort"] != 3 || len(got.Hits) != 2 ||
		got.Recorded[contract.RoomEventStrayChunk] != 1 || len(got.Recorded) != 2 {
		t.Errorf("role with probes: %+v", got)
	}
	if got := v.CodeProbes[without.URL]; got.Err == "" {
		t.Errorf("role without /debug/probes logged no error: %+v", got)
	}
	if h := v.ProbeHits(); h["decode/abort"] != 3 || len(h) != 2 {
		t.Errorf("ProbeHits = %v", h)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
}
