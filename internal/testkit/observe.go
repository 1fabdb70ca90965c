package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func get(ctx context.Context, url string) (*http.Response, func(), error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	resp, err := client.Do(req)
	if err != nil {
		client.CloseIdleConnections()
		return nil, nil, fmt.Errorf("get %s: %w", url, err)
	}
	return resp, func() { resp.Body.Close(); client.CloseIdleConnections() }, nil
}

// GetJSON decodes the JSON body at url into v; a non-200 answer is an error.
func GetJSON(ctx context.Context, url string, v any) error {
	resp, done, err := get(ctx, url)
	if err != nil {
		return err
	}
	defer done()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: status %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Rooms returns an engine's /debug/rooms; base is the engine's base URL.
func Rooms(ctx context.Context, base string) (contract.RoomsResponse, error) {
	var r contract.RoomsResponse
	err := GetJSON(ctx, base+contract.PathDebugRooms, &r)
	return r, err
}

// RoomOn returns a room's record on one engine and whether it is held.
func RoomOn(ctx context.Context, base string, room uint64) (contract.RoomRecord, bool, error) {
	r, err := Rooms(ctx, base)
	if err != nil {
		return contract.RoomRecord{}, false, err
	}
	for _, rec := range r.Held {
		if rec.Room == room {
			return rec, true, nil
		}
	}
	for _, rec := range r.Cleared {
		if rec.Room == room {
			return rec, false, nil
		}
	}
	return contract.RoomRecord{}, false, fmt.Errorf("room %d unknown to %s", room, r.Role)
}

// Scrape parses the Prometheus text at url.
func Scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	resp, done, err := get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer done()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	return tp.TextToMetricFamilies(resp.Body)
}

// Gauge sums a gauge or counter over every series (every TP rank) at url;
// a missing metric is an error.
func Gauge(ctx context.Context, url, name string) (float64, error) {
	fams, err := Scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	f, ok := fams[name]
	if !ok {
		return 0, fmt.Errorf("metric %s missing at %s", name, url)
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}

// Target is what Drained reads: the bundled engine's URLs
// (*engine.Cluster has them).
type Target interface {
	MetricsURLs() []string
	EngineURLs() []string
}

// GaugeIs returns nil when the gauge or counter name at url sums to want,
// or says what it is instead: a condition for Eventually.
func GaugeIs(ctx context.Context, url, name string, want float64) error {
	v, err := Gauge(ctx, url, name)
	if err != nil {
		return err
	}
	if v != want {
		return fmt.Errorf("%s = %v, want %v", name, v, want)
	}
	return nil
}

// Drained returns nil once every slot gauge on every engine is 0 and no
// room is held, or says what is still busy.
func Drained(ctx context.Context, t Target) error {
	for _, u := range t.MetricsURLs() {
		for _, g := range append(contract.SlotGauges(), contract.MetricTokenUsage) { // a fresh engine's KV usage baseline is 0
			v, err := Gauge(ctx, u, g)
			if err != nil {
				return err
			}
			if v != 0 {
				return fmt.Errorf("%s %s = %v", u, g, v)
			}
		}
	}
	for _, base := range t.EngineURLs() {
		r, err := Rooms(ctx, base)
		if err != nil {
			return err
		}
		if len(r.Held) > 0 {
			return fmt.Errorf("%s holds %d rooms, first %d in state %s", r.Role, len(r.Held), r.Held[0].Room, r.Held[0].State)
		}
	}
	return nil
}

// Probes reads base's /debug/probes: every code probe of the role with its
// hits.
func Probes(ctx context.Context, base string) (contract.ProbesResponse, error) {
	var r contract.ProbesResponse
	err := GetJSON(ctx, base+contract.PathDebugProbes, &r)
	return r, err
}
