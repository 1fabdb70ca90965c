package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseMetrics reads the Prometheus text format into a check.Scrape,
// refusing contradictions in the families the checks judge (NaN, ±Inf,
// negative values, a label set twice; see refuseContradictions) and
// dropping non-finite values of the others, and combining series as SGLang
// exports them: an old name (contract.
// MetricAliases) is read as today's when today's is absent; a series with a
// priority label that repeats a total without one is not counted again;
// gauges are kept per rank besides their sum.
func ParseMetrics(r io.Reader) (check.Scrape, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(r)
	if err != nil {
		return check.Scrape{}, fmt.Errorf("parse metrics: %w", err)
	}
	if err := refuseContradictions(fams); err != nil {
		return check.Scrape{}, fmt.Errorf("parse metrics: %w", err)
	}
	s := check.Scrape{Gauges: map[string]float64{}, Counters: map[string]float64{}, Ranks: map[string]map[string]float64{}}
	aliases := contract.MetricAliases()
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fams[name]
		canon := name
		if to, ok := aliases[name]; ok {
			if _, cur := fams[to]; cur {
				continue // today's name wins
			}
			canon = to
		}
		for _, m := range withoutPriorityDuplicates(f.GetMetric()) {
			labels := labelMap(m)
			if et := labels[contract.LabelEngineType]; et != "" && s.EngineType == "" {
				s.EngineType = et
			}
			var v float64
			counter := false
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v, counter = m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v, counter = m.GetUntyped().GetValue(), strings.HasSuffix(canon, "_total")
			default:
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue // not a judged family (those are refused above); JSON cannot hold it
			}
			if counter {
				s.Counters[canon] += v
				continue
			}
			s.Gauges[canon] += v
			if s.Ranks[canon] == nil {
				s.Ranks[canon] = map[string]float64{}
			}
			s.Ranks[canon][check.RankKey(labels)] += v
		}
	}
	dropNonFinite(&s)
	return s, nil
}

// withoutPriorityDuplicates drops series with a priority label whose label
// set without it also has a series (the total the priorities repeat). Where
// only per-priority series exist they are kept, to be summed.
func withoutPriorityDuplicates(ms []*dto.Metric) []*dto.Metric {
	total := map[string]bool{}
	for _, m := range ms {
		if _, ok := labelMap(m)[contract.LabelPriority]; !ok {
			total[labelKey(m)] = true
		}
	}
	var out []*dto.Metric
	for _, m := range ms {
		if _, ok := labelMap(m)[contract.LabelPriority]; ok && total[labelKey(m)] {
			continue
		}
		out = append(out, m)
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// labelKey is a series' labels without priority, in a fixed order.
func labelKey(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if l.GetName() != contract.LabelPriority {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
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
	rr, err = decodeRooms(capped(resp.Body, MaxRoomsBytes, "/debug/rooms answer"))
	if err != nil {
		return rr, fmt.Errorf("rooms %s: decode: %w", base, err)
	}
	return rr, nil
}
