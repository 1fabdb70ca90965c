package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/engine"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func rooms(t *testing.T, base string) engine.RoomsResponse {
	t.Helper()
	var r engine.RoomsResponse
	if err := getJSON(t.Context(), base+"/debug/rooms", &r); err != nil {
		t.Fatalf("debug rooms: %v", err)
	}
	return r
}

// scrape returns the metric families at url.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	return tp.TextToMetricFamilies(resp.Body)
}

// gauge sums a metric over every rank at url.
func gauge(ctx context.Context, url, name string) (float64, error) {
	fams, err := scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	f, ok := fams[name]
	if !ok {
		return 0, fmt.Errorf("metric %s missing at %s", name, url)
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if m.Gauge != nil {
			sum += m.GetGauge().GetValue()
		} else if m.Counter != nil {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}

var queueGauges = []string{engine.MetricPrefillBootstrapQueue, engine.MetricPrefillInflightQueue,
	engine.MetricDecodePreallocQueue, engine.MetricDecodeTransferQueue, engine.MetricRunning, engine.MetricQueue}

// drained reports nil once every queue gauge on every engine is 0, decode
// holds no pages, and no room is held.
func drained(ctx context.Context, c *engine.Cluster) error {
	for _, u := range c.MetricsURLs() {
		for _, g := range append(queueGauges, engine.MetricTokenUsage) {
			v, err := gauge(ctx, u, g)
			if err != nil {
				return err
			}
			if v != 0 {
				return fmt.Errorf("%s %s = %v", u, g, v)
			}
		}
	}
	for _, base := range c.EngineURLs() {
		var r engine.RoomsResponse
		if err := getJSON(ctx, base+"/debug/rooms", &r); err != nil {
			return err
		}
		if len(r.Held) > 0 {
			return fmt.Errorf("%s holds %d rooms, first %d in state %s", r.Role, len(r.Held), r.Held[0].Room, r.Held[0].State)
		}
	}
	return nil
}

func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
