package engine_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// TestRouterReadiness: /readiness is 200 only while prefill and decode both
// answer their /health, else 503 with a JSON body naming the unhealthy
// role; /health and /liveness stay 200 (liveness only, as on SGLang's
// model gateway).
func TestRouterReadiness(t *testing.T) {
	testkit.NoLeaks(t)
	var decodeDown atomic.Bool
	prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(prefill.Close)
	decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if decodeDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(decode.Close)
	rt := startTestRouter(t, prefill, decode)
	get := func(path string) (int, contract.ReadinessBody) {
		t.Helper()
		resp, err := http.Get("http://" + rt.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b contract.ReadinessBody
		if path == contract.PathReadiness {
			if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
				t.Fatalf("%s body: %v", path, err)
			}
		}
		return resp.StatusCode, b
	}
	if code, b := get(contract.PathReadiness); code != 200 || b.Status != "ready" {
		t.Fatalf("healthy: %d %+v", code, b)
	}
	decodeDown.Store(true)
	code, b := get(contract.PathReadiness)
	if code != 503 || b.Status != "not ready" || len(b.Unhealthy) != 1 || !strings.HasPrefix(b.Unhealthy[0], "decode ") {
		t.Fatalf("decode down: %d %+v, want 503 naming decode", code, b)
	}
	for _, p := range []string{contract.PathHealth, contract.PathLiveness} {
		if code, _ := get(p); code != 200 {
			t.Errorf("%s with decode down: %d, want 200 (liveness only)", p, code)
		}
	}
}
