package record

import (
	"context"
	"encoding/json"
	"errors"
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

// Limits on what a target's endpoints may send, so a broken or hostile
// target cannot make the recorder hold an unbounded answer. The bundled
// engine's /metrics is a few KiB and its /debug/rooms (2000 cleared rooms
// of up to 64 events) about 20 MiB.
const (
	// MaxScrapeBytes bounds one /metrics answer.
	MaxScrapeBytes = 16 << 20
	// MaxRoomsBytes bounds one /debug/rooms answer.
	MaxRoomsBytes = 64 << 20
)

// ErrTooLarge is wrapped when a target's answer is over its limit.
var ErrTooLarge = errors.New("answer over its size limit")

// capped reads r and fails with ErrTooLarge past limit bytes, rather than
// silently truncating (a cut answer would parse as a smaller one).
func capped(r io.Reader, limit int64, what string) io.Reader {
	return &cappedReader{r: io.LimitReader(r, limit+1), limit: limit, what: what}
}

type cappedReader struct {
	r           io.Reader
	read, limit int64
	what        string
}

func (c *cappedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.limit {
		return 0, fmt.Errorf("read %s: %w: more than %d bytes", c.what, ErrTooLarge, c.limit)
	}
	return n, err
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
	s, err := ParseMetrics(capped(resp.Body, MaxScrapeBytes, "metrics"))
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
	if err := json.NewDecoder(capped(resp.Body, MaxRoomsBytes, "/debug/rooms answer")).Decode(&rr); err != nil {
		return rr, fmt.Errorf("rooms %s: decode: %w", base, err)
	}
	return rr, nil
}
