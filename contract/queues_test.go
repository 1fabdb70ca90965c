package contract

import (
	"slices"
	"testing"
)

// Every queue rule bounds slot gauges of its side, and a room that must be
// in a queue may be in it, over every combination of a record's facts: a
// rule whose two predicates cross would fail a correct engine.
func TestQueueRulesConsistent(t *testing.T) {
	t.Parallel()
	for _, rule := range QueueRules() {
		for _, g := range rule.Gauges {
			if !slices.Contains(SlotGauges(), g) {
				t.Errorf("%v: %s is no slot gauge", rule.Gauges, g)
			}
			if !slices.Contains(NeededGauges(rule.Side), g) {
				t.Errorf("%v: %s is not a gauge %s exports", rule.Gauges, g, rule.Side)
			}
		}
		if rule.Why == "" {
			t.Errorf("%v: no reason", rule.Gauges)
		}
		for bits := range 1 << 7 {
			f := func(i int) bool { return bits&(1<<i) != 0 }
			r := QueueRoom{Requested: f(0), MetadataSent: f(1), Committed: f(2), Failed: f(3), Bootstrapping: f(4), Started: f(5), Unknown: f(6)}
			if rule.Must(r) && !rule.May(r) {
				t.Errorf("%v: %+v must be in the queue but may not", rule.Gauges, r)
			}
		}
	}
}
