package record

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseMetrics reads the Prometheus text format into a check.Scrape.
func ParseMetrics(r io.Reader) (check.Scrape, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(r)
	if err != nil {
		return check.Scrape{}, fmt.Errorf("parse metrics: %w", err)
	}
	s := check.Scrape{Gauges: map[string]float64{}, Counters: map[string]float64{}}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Counters[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Gauges[name] += m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				if strings.HasSuffix(name, "_total") {
					s.Counters[name] += m.GetUntyped().GetValue()
				} else {
					s.Gauges[name] += m.GetUntyped().GetValue()
				}
			}
		}
	}
	return s, nil
}

// scrapeURL GETs a /metrics URL and parses it.
func scrapeURL(ctx context.Context, c *http.Client, url string) (check.Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return check.Scrape{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return check.Scrape{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return check.Scrape{}, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	s, err := ParseMetrics(resp.Body)
	if err != nil {
		return check.Scrape{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	return s, nil
}

// fetchRooms GETs base/debug/rooms.
func fetchRooms(ctx context.Context, c *http.Client, base string) (contract.RoomsResponse, error) {
	var rr contract.RoomsResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+contract.PathDebugRooms, nil)
	if err != nil {
		return rr, fmt.Errorf("rooms %s: %w", base, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return rr, fmt.Errorf("rooms %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return rr, fmt.Errorf("rooms %s: status %d", base, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil {
		return rr, fmt.Errorf("rooms %s: decode: %w", base, err)
	}
	return rr, nil
}
