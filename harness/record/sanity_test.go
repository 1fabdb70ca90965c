package record

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit/hostile"
)

// TestParseMetricsRefusesContradictions: a judged family with NaN, +Inf, a
// negative value or one label set twice fails the scrape, naming the
// series; the same in a family nothing judges is dropped, and the scrape
// stays usable (and JSON-encodable).
func TestParseMetricsRefusesContradictions(t *testing.T) {
	t.Parallel()
	g := contract.MetricRunning
	for _, tc := range []struct {
		name, text, want string
	}{
		{"nan", "# TYPE " + g + " gauge\n" + g + `{tp_rank="0"} NaN` + "\n", g + `{tp_rank="0"} is NaN`},
		{"inf", "# TYPE " + g + " gauge\n" + g + `{tp_rank="0"} +Inf` + "\n", g + `{tp_rank="0"} is +Inf`},
		{"negative", "# TYPE " + g + " gauge\n" + g + `{tp_rank="0"} -1` + "\n", "cannot be below zero"},
		{"negative counter", "# TYPE sglang:num_requests_total counter\nsglang:num_requests_total -4\n", "sglang:num_requests_total{} is -4"},
		{"duplicate", "# TYPE " + g + " gauge\n" + g + `{tp_rank="0"} 0` + "\n" + g + `{tp_rank="0"} 3` + "\n", "appears twice (values 0 and 3)"},
		{"old name", "# TYPE sglang:num_prefill_prealloc_queue_reqs gauge\nsglang:num_prefill_prealloc_queue_reqs NaN\n", "is NaN"},
		{"sum overflow", "# TYPE " + g + " gauge\n" + g + `{tp_rank="0"} 1e308` + "\n" + g + `{tp_rank="1"} 1e308` + "\n", "sum past the largest float"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMetrics(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
	s, err := ParseMetrics(strings.NewReader("# TYPE other_ratio gauge\nother_ratio NaN\n# TYPE big gauge\nbig 1e308\nbig{a=\"1\"} 1e308\n" +
		"# TYPE other_neg gauge\nother_neg -2\n# TYPE " + g + " gauge\n" + g + " 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Gauges["other_ratio"]; ok || s.Gauges["other_neg"] != -2 || s.Gauges[g] != 1 {
		t.Fatalf("unjudged NaN kept, or a good value lost: %+v", s.Gauges)
	}
	if _, ok := s.Gauges["big"]; ok {
		t.Fatalf("an overflowed sum was kept: %+v", s.Gauges)
	}
}

// TestFetchProbesBounded: a /debug/probes answer that never ends, or is a
// GiB, fails at the size limit instead of being held in memory.
func TestFetchProbesBounded(t *testing.T) {
	t.Parallel()
	for _, b := range []hostile.Behaviour{hostile.Endless, hostile.Huge} {
		s, err := hostile.Start(hostile.Options{Behaviour: b, Tick: -1}) // no pause: the limit, not a timer, ends it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c := &http.Client{Timeout: 2 * time.Minute} // the size limit must end it, long before this
		cp := fetchProbes(t.Context(), c, s.URL())
		c.CloseIdleConnections()
		if !strings.Contains(cp.Err, "answer over its size limit") {
			t.Fatalf("%s: want the size limit, got %+v", b, cp)
		}
	}
}

// TestDecodeRooms: an answer of more than MaxRooms tiny rooms is refused
// as it is read (a 1 GiB rooms array of them held ~600 MiB in the matrix);
// a well-formed answer, null lists and unknown keys decode as before.
func TestDecodeRooms(t *testing.T) {
	t.Parallel()
	rr, err := decodeRooms(strings.NewReader(`{"role":"decode","extra":{"a":[1]},"held":[{"room":7,"state":"Transferring"}],"cleared":null}`))
	if err != nil || rr.Role != "decode" || len(rr.Held) != 1 || rr.Held[0].Room != 7 || rr.Held[0].State != "Transferring" || rr.Cleared != nil {
		t.Fatalf("%+v %v", rr, err)
	}
	rr, err = decodeRooms(strings.NewReader(`{"role":"decode","held":[],"queues":[{"sglang:num_running_reqs":3},{"sglang:num_running_reqs":3}]}`))
	if err != nil || len(rr.Queues) != 2 || rr.Queues[1]["sglang:num_running_reqs"] != 3 {
		t.Fatalf("queues: %+v %v", rr, err)
	}
	for _, bad := range []string{`[]`, `{"held":{}}`, `{"held":[1]}`, `{"held":[`,
		`{"queues":{}}`, `{"queues":[{"g":-1}]}`, `{"queues":[{"g":1.5}]}`, `{"queues":[{"g":"1"}]}`} {
		if _, err := decodeRooms(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
	s, err := hostile.Start(hostile.Options{Behaviour: hostile.Huge})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := &http.Client{Timeout: 2 * time.Minute}
	defer c.CloseIdleConnections()
	if _, err := fetchRooms(t.Context(), c, s.URL()); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 20000 rooms") {
		t.Fatalf("want the room limit, got %v", err)
	}
}
