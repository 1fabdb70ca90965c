package engine_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/observe"
	dto "github.com/prometheus/client_model/go"
)

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		<-tick.C
	}
}

// consistently checks cond holds on every poll for the whole window: used to
// show a wedge stays a wedge (the engine never heals itself).
func consistently(t *testing.T, window time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(window)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("condition stopped holding: %v", err)
		}
		<-tick.C
	}
}

func getJSON(ctx context.Context, url string, v any) error { return observe.GetJSON(ctx, url, v) }

func rooms(t *testing.T, base string) contract.RoomsResponse {
	t.Helper()
	var r contract.RoomsResponse
	if err := getJSON(t.Context(), base+contract.PathDebugRooms, &r); err != nil {
		t.Fatalf("debug rooms: %v", err)
	}
	return r
}

func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	return observe.Scrape(ctx, url)
}

func gauge(ctx context.Context, url, name string) (float64, error) {
	return observe.Gauge(ctx, url, name)
}

func drained(ctx context.Context, c *engine.Cluster) error { return observe.Drained(ctx, c) }

func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
