package record

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// judged are the families whose values a check or the watchdog judges:
// slot, page and table gauges, KV usage, waiting queues and progress
// counters.
func judged() map[string]bool {
	out := map[string]bool{contract.MetricTokenUsage: true}
	for _, l := range [][]string{contract.SlotGauges(), contract.PageGauges(), contract.TableGauges(), contract.OverdueGauges(), contract.QueueGauges(), contract.ProgressCounters()} {
		for _, n := range l {
			out[n] = true
		}
	}
	return out
}

// refuseContradictions returns an error naming the first series of a
// judged family that no working exporter sends: a value that is NaN,
// infinite or below zero (these are counts, and a ratio of counts), or a
// second series with the same labels (two values for one gauge). Such a
// scrape must fail, naming the series, rather than be read: NaN compares
// equal to nothing, so a NaN gauge would never look stuck, and a
// duplicate pair 0 and 3 sums to one steady 3 or, as 3 and -3, to 0.
func refuseContradictions(fams map[string]*dto.MetricFamily) error {
	want := judged()
	aliases := contract.MetricAliases()
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		canon := name
		if to, ok := aliases[name]; ok {
			canon = to
		}
		if !want[canon] {
			continue
		}
		seen := map[string]float64{}
		total := 0.0
		for _, m := range fams[name].GetMetric() {
			v, ok := value(fams[name].GetType(), m)
			if !ok {
				continue
			}
			series := name + "{" + fullLabels(m) + "}"
			if prev, dup := seen[series]; dup {
				return fmt.Errorf("%s appears twice (values %g and %g): one label set with two values", series, prev, v)
			}
			seen[series] = v
			total += v
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("%s is %g: a judged metric must be a finite count (the exporter is broken)", series, v)
			case v < 0:
				return fmt.Errorf("%s is %g: a judged metric is a count and cannot be below zero (the exporter is broken)", series, v)
			case math.IsInf(total, 0):
				return fmt.Errorf("%s: the series of %s sum past the largest float", series, name)
			}
		}
	}
	return nil
}

// dropNonFinite deletes sums that overflowed in families nothing judges:
// the event log's JSON cannot hold them.
func dropNonFinite(s *check.Scrape) {
	for _, m := range []map[string]float64{s.Gauges, s.Counters} {
		for k, v := range m {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				delete(m, k)
				delete(s.Ranks, k)
			}
		}
	}
	for _, ranks := range s.Ranks {
		for k, v := range ranks {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				delete(ranks, k)
			}
		}
	}
}

// value is a gauge, counter or untyped series' value; ok is false for the
// types ParseMetrics does not read.
func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// fullLabels is every label of a series, sorted: name="value",...
func fullLabels(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// MaxRooms bounds the rooms (held and cleared together) one /debug/rooms
// answer may list. The bundled engine keeps 2000 cleared rooms and holds
// at most its concurrency; a byte limit alone would let 64 MiB of tiny
// records become over a million decoded rooms, hundreds of MiB, each round.
const MaxRooms = 20000

// decodeRooms reads a /debug/rooms answer room by room, so that an answer
// over MaxRooms is refused as it is read rather than after it is held.
func decodeRooms(r io.Reader) (contract.RoomsResponse, error) {
	var rr contract.RoomsResponse
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err != nil {
		return rr, err
	}
	n := 0
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return rr, err
		}
		key, _ := t.(string)
		var list *[]contract.RoomRecord
		switch key {
		case "held":
			list = &rr.Held
		case "cleared":
			list = &rr.Cleared
		case "role":
			if err := dec.Decode(&rr.Role); err != nil {
				return rr, err
			}
			continue
		case "queues":
			// Small by construction (a few gauges per TP rank), and read
			// whole the byte cap allows; judged only if sane.
			if err := dec.Decode(&rr.Queues); err != nil {
				return rr, fmt.Errorf("queues: %w", err)
			}
			if err := saneQueues(rr.Queues); err != nil {
				return rr, err
			}
			continue
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return rr, err
			}
			continue
		}
		if !dec.More() { // malformed: a key with no value
			return rr, fmt.Errorf("key %q without a value", key)
		}
		t, err = dec.Token()
		if err != nil {
			return rr, err
		}
		if t == nil {
			continue // null: no rooms
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return rr, fmt.Errorf("%s: want an array, got %v", key, t)
		}
		for dec.More() {
			if n++; n > MaxRooms {
				return rr, fmt.Errorf("%w: more than %d rooms", ErrTooLarge, MaxRooms)
			}
			var rec contract.RoomRecord
			if err := dec.Decode(&rec); err != nil {
				return rr, err
			}
			*list = append(*list, rec)
		}
		if err := delim(dec, ']'); err != nil {
			return rr, err
		}
	}
	return rr, delim(dec, '}')
}

// MaxQueueRanks bounds the TP ranks a /debug/rooms answer's queues may
// list.
const MaxQueueRanks = 1024

// saneQueues refuses queue readings no engine gives: more ranks than
// MaxQueueRanks, or a count that is negative, fractional or not finite.
func saneQueues(q []map[string]float64) error {
	if len(q) > MaxQueueRanks {
		return fmt.Errorf("%w: queues of %d ranks, more than %d", ErrTooLarge, len(q), MaxQueueRanks)
	}
	for r, gauges := range q {
		for g, v := range gauges {
			if v < 0 || v != math.Trunc(v) || math.IsInf(v, 0) {
				return fmt.Errorf("queues: rank %d %s = %v is not a count", r, g, v)
			}
		}
	}
	return nil
}

// delim reads the next token and wants it to be d.
func delim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := t.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %q, got %v", d, t)
	}
	return nil
}
