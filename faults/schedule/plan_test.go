package schedule

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/faults"
)

// stub is a fault that does nothing; plan tests only need its name.
type stub string

func (s stub) Name() string        { return string(s) }
func (s stub) Layer() faults.Layer { return faults.LayerNetwork }
func (s stub) Inject(context.Context, faults.Target) (faults.Heal, error) {
	return func(context.Context) error { return nil }, nil
}
func (s stub) Evidence() faults.Evidence { return faults.Evidence{Fault: string(s)} }

const (
	ms = time.Millisecond
	s1 = time.Second
)

type span struct {
	name       string
	start, end time.Duration
}

func spans(tl Timeline) []span {
	var out []span
	for _, w := range tl.Windows {
		out = append(out, span{w.Name, w.Start, w.End})
	}
	return out
}

func TestPlanFixed(t *testing.T) {
	t.Parallel()
	a, b := stub("a"), stub("b")
	cases := []struct {
		name    string
		entries []Entry
		length  time.Duration
		want    []span
	}{
		{"single", []Entry{{Fault: a, At: Fixed(2 * s1), For: Fixed(s1)}}, 10 * s1,
			[]span{{"a", 2 * s1, 3 * s1}}},
		{"clipped at end", []Entry{{Fault: a, At: Fixed(9 * s1), For: Fixed(5 * s1)}}, 10 * s1,
			[]span{{"a", 9 * s1, 10 * s1}}},
		{"starts after run", []Entry{{Fault: a, At: Fixed(10 * s1), For: Fixed(s1)}}, 10 * s1, nil},
		{"every with count", []Entry{{Fault: a, At: Fixed(s1), For: Fixed(100 * ms), Every: 2 * s1, Count: 3}}, 10 * s1,
			[]span{{"a", s1, s1 + 100*ms}, {"a", 3 * s1, 3*s1 + 100*ms}, {"a", 5 * s1, 5*s1 + 100*ms}}},
		{"every until end", []Entry{{Fault: a, For: Fixed(s1), Every: 4 * s1}}, 10 * s1,
			[]span{{"a", 0, s1}, {"a", 4 * s1, 5 * s1}, {"a", 8 * s1, 9 * s1}}},
		{"sorted across entries", []Entry{
			{Fault: a, At: Fixed(5 * s1), For: Fixed(s1)},
			{Fault: b, At: Fixed(s1), For: Fixed(s1)},
		}, 10 * s1, []span{{"b", s1, 2 * s1}, {"a", 5 * s1, 6 * s1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tl, err := Plan(1, tc.entries, tc.length)
			if err != nil {
				t.Fatal(err)
			}
			if got := spans(tl); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("windows %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlanRejects(t *testing.T) {
	t.Parallel()
	a := stub("a")
	cases := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"no fault", Entry{For: Fixed(s1)}, "Fault"},
		{"zero for", Entry{Fault: a}, "For"},
		{"negative at", Entry{Fault: a, At: Fixed(-s1), For: Fixed(s1)}, "At"},
		{"inverted range", Entry{Fault: a, At: Between(3*s1, s1), For: Fixed(s1)}, "At"},
		{"overlapping repeats", Entry{Fault: a, For: Between(s1, 3*s1), Every: 2 * s1}, "Every"},
		{"count without every", Entry{Fault: a, For: Fixed(s1), Count: 2}, "Count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Plan(1, []Entry{tc.entry}, 10*s1)
			if err == nil || !strings.Contains(err.Error(), "field "+tc.want) {
				t.Errorf("err %v, want one naming field %s", err, tc.want)
			}
		})
	}
	if _, err := Plan(1, nil, 0); err == nil {
		t.Error("zero run length accepted")
	}
}

func TestPlanSeeded(t *testing.T) {
	t.Parallel()
	entries := []Entry{
		{Fault: stub("a"), At: Between(2*s1, 5*s1), For: Between(200*ms, 2*s1)},
		{Fault: stub("b"), At: Between(0, s1), For: Between(100*ms, 500*ms), Every: 3 * s1},
	}
	plan := func(seed uint64) []span {
		tl, err := Plan(seed, entries, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tl.Windows {
			e := entries[w.Entry]
			if d := w.End - w.Start; d < e.For.Min || d > e.For.hi() {
				t.Errorf("seed %d: window %v lasts %v, outside %v", seed, w.Name, d, e.For)
			}
		}
		if a := tl.Windows[slicesIndex(tl, "a")].Start; a < 2*s1 || a > 5*s1 {
			t.Errorf("seed %d: a starts at %v, outside 2s-5s", seed, a)
		}
		return spans(tl)
	}
	if !reflect.DeepEqual(plan(42), plan(42)) {
		t.Error("same seed gave different timelines")
	}
	if reflect.DeepEqual(plan(42), plan(43)) {
		t.Error("seeds 42 and 43 gave the same timeline")
	}
}

func slicesIndex(tl Timeline, name string) int {
	for i, w := range tl.Windows {
		if w.Name == name {
			return i
		}
	}
	return -1
}

func TestDue(t *testing.T) {
	t.Parallel()
	tl, err := Plan(1, []Entry{
		{Fault: stub("a"), At: Fixed(s1), For: Fixed(s1), Every: 2 * s1, Count: 2}, // 1-2s, 3-4s
		{Fault: stub("b"), At: Fixed(2 * s1), For: Fixed(2 * s1)},                  // 2-4s
	}, 10*s1)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ws []Window) string {
		var n []string
		for _, w := range ws {
			n = append(n, w.Name)
		}
		return strings.Join(n, ",")
	}
	steps := []struct {
		elapsed    time.Duration
		end, start string
		next       time.Duration
	}{
		{0, "", "", s1},
		{500 * ms, "", "", s1},
		{s1, "", "a", 2 * s1},
		{2 * s1, "a", "b", 3 * s1}, // a heals before b starts
		{3 * s1, "", "a", 4 * s1},
		{4 * s1, "b,a", "", Never}, // by window id: b started first
		{20 * s1, "", "", Never},
	}
	done := 0
	for _, st := range steps {
		got := tl.Due(st.elapsed, done)
		done = got.Done
		if names(got.End) != st.end || names(got.Start) != st.start || got.Next != st.next {
			t.Errorf("Due(%v) = end %q start %q next %v; want end %q start %q next %v",
				st.elapsed, names(got.End), names(got.Start), got.Next, st.end, st.start, st.next)
		}
	}
	// Falling behind: one late call returns everything, ends of earlier
	// windows before the starts that follow them.
	late := tl.Due(10*s1, 0)
	if len(late.Start) != 3 || len(late.End) != 3 || late.Next != Never {
		t.Errorf("late Due: %d starts, %d ends, next %v", len(late.Start), len(late.End), late.Next)
	}
	if act := tl.ActiveAt(3500 * ms); names(act) != "b,a" && names(act) != "a,b" {
		t.Errorf("ActiveAt(3.5s) = %q", names(act))
	}
}

func TestParseRange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Range
		bad  bool
	}{
		{"2s", Fixed(2 * s1), false},
		{"2s-5s", Between(2*s1, 5*s1), false},
		{"200ms - 2s", Between(200*ms, 2*s1), false},
		{"soon", Range{}, true},
		{"1s-later", Range{}, true},
	}
	for _, tc := range cases {
		got, err := ParseRange(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRange(%q) = %v, %v", tc.in, got, err)
		}
	}
	if s := Between(2*s1, 5*s1).String(); s != "2s-5s" {
		t.Errorf("String = %q", s)
	}
}

func TestRangeDraw(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		if d := Between(50*ms, 500*ms).Draw(rng); d < 50*ms || d > 500*ms {
			t.Fatalf("draw %v outside 50ms-500ms", d)
		}
	}
	if d := Fixed(s1).Draw(nil); d != s1 {
		t.Errorf("fixed draw %v", d)
	}
}
