package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/prometheus/common/model"
)

// engineMetrics is /metrics as the bundled engine and SGLang write it (one
// series per TP rank, SGLang's labels), for the seed corpus.
func engineMetrics() string {
	var b strings.Builder
	labels := `model_name="pdchaos-fake",engine_type="decode",tp_rank="%d",pp_rank="0",moe_ep_rank="0"`
	for _, g := range contract.EngineGauges() {
		fmt.Fprintf(&b, "# HELP %s pdchaos bundled engine: %s\n# TYPE %s gauge\n", g, g, g)
		for r := range 2 {
			fmt.Fprintf(&b, "%s{"+labels+"} %d\n", g, r, r)
		}
	}
	for _, c := range contract.EngineCounters() {
		fmt.Fprintf(&b, "# TYPE %s counter\n%s{"+labels+"} 7\n", c, c, 0)
	}
	return b.String()
}

// encodeScrape writes s back as Prometheus text, one unlabelled series per
// name.
func encodeScrape(s check.Scrape) []byte {
	var b bytes.Buffer
	for _, kind := range []struct {
		typ string
		m   map[string]float64
	}{{"gauge", s.Gauges}, {"counter", s.Counters}} {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range kind.m {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "# TYPE %s %s\n%s %s\n", name, kind.typ, name, strconv.FormatFloat(kind.m[name], 'g', -1, 64))
		}
	}
	return b.Bytes()
}

func sameValues(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || (v != w && !(math.IsNaN(v) && math.IsNaN(w))) {
			return false
		}
	}
	return true
}

// FuzzParseMetrics reads any text as a /metrics answer, as the recorder
// does for a bundled or an external target: no panic; a name is a gauge or
// a counter, never both; and the sums, written back as text, parse to the
// same sums.
func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte(engineMetrics()))
	f.Add([]byte("sglang:num_requests_total 3\nsglang:token_usage 0.5\n"))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"+Inf\"} 1\nx_sum 2\nx_count 1\n"))
	f.Add([]byte("# TYPE a counter\na NaN\n# TYPE b gauge\nb -Inf\n"))
	f.Add([]byte(`{"sglang.odd name"} 1` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseMetrics(bytes.NewReader(in))
		if err != nil {
			return
		}
		for name := range s.Gauges {
			if _, ok := s.Counters[name]; ok {
				t.Fatalf("%q is both a gauge and a counter", name)
			}
		}
		for name := range s.Gauges {
			if !model.IsValidLegacyMetricName(name) {
				return // only the quoted UTF-8 syntax can write it back; not ours to test
			}
		}
		for name := range s.Counters {
			if !model.IsValidLegacyMetricName(name) {
				return
			}
		}
		text := encodeScrape(s)
		back, err := ParseMetrics(bytes.NewReader(text))
		if err != nil || !sameValues(back.Gauges, s.Gauges) || !sameValues(back.Counters, s.Counters) {
			t.Fatalf("%+v written as %q parses as %+v (%v)", s, text, back, err)
		}
	})
}

// endless serves the same line forever.
type endless struct {
	line []byte
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.line[(e.off+i)%len(e.line)]
	}
	e.off += len(p)
	return len(p), nil
}

// A target whose /metrics or /debug/rooms never ends is refused at the
// limit with ErrTooLarge, not read until memory runs out; an answer of
// exactly the limit is read whole.
func TestCappedAnswers(t *testing.T) {
	t.Parallel()
	_, err := ParseMetrics(capped(&endless{line: []byte("sglang:num_requests_total 1\n")}, 1<<16, "metrics"))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless metrics: %v, want ErrTooLarge", err)
	}
	exact := strings.Repeat("x", 1000)
	got, err := io.ReadAll(capped(strings.NewReader(exact), 1000, "rooms"))
	if err != nil || string(got) != exact {
		t.Fatalf("answer of exactly the limit: %d bytes, %v", len(got), err)
	}
	if _, err := io.ReadAll(capped(strings.NewReader(exact+"y"), 1000, "rooms")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("answer one byte over the limit: %v, want ErrTooLarge", err)
	}
}
