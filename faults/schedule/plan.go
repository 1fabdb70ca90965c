package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/faults"
)

// Never is Step.Next when nothing more is due.
const Never = time.Duration(math.MaxInt64)

// planStream is the second PCG word for fault timelines, so they draw from
// their own stream of a run's seed and do not shift when other parts of the
// run draw more or fewer numbers.
const planStream = 0x7064636861_6f7321 // "pdchaos!"

// Range is a duration, or a closed range [Min, Max] to draw one from. A zero
// Max (or Max == Min) means exactly Min.
type Range struct {
	Min time.Duration `json:"min"`
	Max time.Duration `json:"max,omitempty"`
}

// Fixed is exactly d.
func Fixed(d time.Duration) Range { return Range{Min: d} }

// Between is a duration drawn uniformly from [min, max].
func Between(min, max time.Duration) Range { return Range{Min: min, Max: max} }

// ParseRange reads "2s" or "2s-5s", the scenario file form.
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	min, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return Range{}, fmt.Errorf("parse range %q: %w", s, err)
	}
	if !found {
		return Fixed(min), nil
	}
	max, err := time.ParseDuration(strings.TrimSpace(hi))
	if err != nil {
		return Range{}, fmt.Errorf("parse range %q: %w", s, err)
	}
	return Between(min, max), nil
}

// UnmarshalText lets a scenario file write a Range as "2s" or "2s-5s".
func (r *Range) UnmarshalText(b []byte) error {
	v, err := ParseRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText writes the form ParseRange reads.
func (r Range) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// String is "2s" or "2s-5s".
func (r Range) String() string {
	if r.Max <= r.Min {
		return r.Min.String()
	}
	return r.Min.String() + "-" + r.Max.String()
}

func (r Range) hi() time.Duration { return max(r.Min, r.Max) }

func (r Range) validate(field string) error {
	switch {
	case r.Min < 0:
		return fmt.Errorf("field %s: %v is negative", field, r.Min)
	case r.Max != 0 && r.Max < r.Min:
		return fmt.Errorf("field %s: max %v below min %v", field, r.Max, r.Min)
	}
	return nil
}

// Draw picks a duration uniformly in the range, using rng only for a real
// range. Scenario code uses it to resolve fault attributes given as ranges
// (a latency of 50ms-500ms) from the run's seeded rand, since Toxiproxy's
// own jitter cannot be seeded.
func (r Range) Draw(rng *rand.Rand) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// Entry places one fault on the timeline: first at At, lasting For, then,
// if Every > 0, again every Every after the previous start, Count times in
// all (0: until the run ends). At is drawn once per entry, For once per
// window.
type Entry struct {
	Fault faults.Fault
	At    Range
	For   Range
	Every time.Duration
	Count int
}

// Validate names the first bad field. A repeating entry must not overlap
// itself, so Every must exceed the longest For.
func (e Entry) Validate() error {
	if e.Fault == nil {
		return errors.New("field Fault: nil")
	}
	if err := e.At.validate("At"); err != nil {
		return err
	}
	if err := e.For.validate("For"); err != nil {
		return err
	}
	switch {
	case e.For.Min <= 0:
		return fmt.Errorf("field For: %v must be > 0", e.For)
	case e.Every < 0:
		return fmt.Errorf("field Every: %v is negative", e.Every)
	case e.Every > 0 && e.Every <= e.For.hi():
		return fmt.Errorf("field Every: %v must exceed For %v so windows do not overlap", e.Every, e.For)
	case e.Count < 0:
		return fmt.Errorf("field Count: %d is negative", e.Count)
	case e.Count > 1 && e.Every == 0:
		return fmt.Errorf("field Count: %d windows need Every > 0", e.Count)
	}
	return nil
}

// Window is one planned application of a fault, as offsets from the run's
// start.
type Window struct {
	ID    int           `json:"id"`    // index in Timeline.Windows
	Entry int           `json:"entry"` // index of the Entry it came from
	Fault faults.Fault  `json:"-"`
	Name  string        `json:"fault"`
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
}

// Timeline is a resolved fault schedule: concrete windows sorted by start.
type Timeline struct {
	Seed    uint64        `json:"seed"`
	Length  time.Duration `json:"length_ns"`
	Windows []Window      `json:"windows"`
	events  []event
}

// event is a window's start or end; ends sort before starts at one instant
// so a repeating fault heals before it is applied again.
type event struct {
	at    time.Duration
	start bool
	id    int
}

// Plan resolves entries into a Timeline for a run of runLength, drawing
// every random choice from seed. Windows that would start at or after
// runLength are dropped; ends are clipped to runLength.
func Plan(seed uint64, entries []Entry, runLength time.Duration) (Timeline, error) {
	if runLength <= 0 {
		return Timeline{}, fmt.Errorf("plan faults: run length %v must be > 0", runLength)
	}
	rng := rand.New(rand.NewPCG(seed, planStream))
	var ws []Window
	for i, e := range entries {
		if err := e.Validate(); err != nil {
			return Timeline{}, fmt.Errorf("plan faults: entry %d: %w", i, err)
		}
		start := e.At.Draw(rng)
		for k := 0; start < runLength && (e.Count == 0 || k < e.Count); k++ {
			end := min(start+e.For.Draw(rng), runLength)
			ws = append(ws, Window{Entry: i, Fault: e.Fault, Name: e.Fault.Name(), Start: start, End: end})
			if e.Every == 0 {
				break
			}
			start += e.Every
		}
	}
	slices.SortStableFunc(ws, func(a, b Window) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Entry, b.Entry))
	})
	tl := Timeline{Seed: seed, Length: runLength, Windows: ws}
	for i := range tl.Windows {
		tl.Windows[i].ID = i
		tl.events = append(tl.events, event{at: ws[i].Start, start: true, id: i}, event{at: ws[i].End, id: i})
	}
	slices.SortStableFunc(tl.events, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.start != b.start {
			if a.start {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.id, b.id)
	})
	return tl, nil
}

// Step is what is due at one moment of a run.
type Step struct {
	// End lists windows to heal, before Start is applied.
	End []Window
	// Start lists windows to apply.
	Start []Window
	// Done is how many events are consumed; pass it to the next Due.
	Done int
	// Next is the elapsed time at which something is next due, or Never.
	Next time.Duration
}

// Due returns the windows that end and start by elapsed, given that the
// first done events were handled already. It reads no clock.
func (tl Timeline) Due(elapsed time.Duration, done int) Step {
	s := Step{Done: done, Next: Never}
	for ; s.Done < len(tl.events); s.Done++ {
		ev := tl.events[s.Done]
		if ev.at > elapsed {
			s.Next = ev.at
			break
		}
		if ev.start {
			s.Start = append(s.Start, tl.Windows[ev.id])
		} else {
			s.End = append(s.End, tl.Windows[ev.id])
		}
	}
	return s
}

// ActiveAt lists the windows active at elapsed, for reports that name the
// faults active when a violation happened.
func (tl Timeline) ActiveAt(elapsed time.Duration) []Window {
	var out []Window
	for _, w := range tl.Windows {
		if w.Start <= elapsed && elapsed < w.End {
			out = append(out, w)
		}
	}
	return out
}
