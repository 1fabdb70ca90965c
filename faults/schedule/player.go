package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/faults"
)

// DefaultHealTimeout bounds one heal when Player.HealTimeout is zero.
const DefaultHealTimeout = 10 * time.Second

// Record is what happened to one window: when it was really applied and
// healed (offsets from the run's base time), what the fault reported, and
// any error. A window whose injection failed has Applied false.
type Record struct {
	Window       int             `json:"window"`
	Fault        string          `json:"fault"`
	Layer        faults.Layer    `json:"layer"`
	PlannedStart time.Duration   `json:"planned_start_ns"`
	PlannedEnd   time.Duration   `json:"planned_end_ns"`
	Applied      bool            `json:"applied"`
	Start        time.Duration   `json:"start_ns"`
	End          time.Duration   `json:"end_ns"`
	Evidence     faults.Evidence `json:"evidence"`
	Error        string          `json:"error,omitempty"`
}

// Player plays a Timeline against a target. It owns no goroutine: Play runs
// on the caller's and returns only when every fault it applied is healed.
type Player struct {
	// Target takes the faults.
	Target faults.Target
	// Timeline is what to play.
	Timeline Timeline
	// HealTimeout bounds each heal; zero means DefaultHealTimeout. Heals run
	// on a context detached from Play's, so a cancelled run still heals.
	HealTimeout time.Duration
	// StopOnError ends Play at the first failed injection; by default the
	// failure is recorded and play goes on.
	StopOnError bool
	// OnStart, if set, is called after each window is applied; OnEnd after
	// each is healed. A panic in either heals everything, then propagates.
	OnStart func(Record)
	OnEnd   func(Record)
}

type active struct {
	heal faults.Heal
	rec  int // index in records
}

// Play applies and heals each window at its time, measured with the
// monotonic clock from base (the run's base time, shared with the rest of
// the run's recording). It returns the records in order of application.
// On ctx cancel, an error with StopOnError, or a panic in a callback, it
// heals every active fault first. The error joins every injection and heal
// error, or is ctx's error when the run was cancelled.
func (p *Player) Play(ctx context.Context, base time.Time) (records []Record, err error) {
	live := map[int]active{}
	var errs []error
	defer func() {
		r := recover()
		for _, id := range slices.Sorted(maps.Keys(live)) {
			if herr := p.heal(ctx, base, live, id, records, false); herr != nil {
				errs = append(errs, herr)
			}
		}
		if r != nil {
			panic(r)
		}
		if ctx.Err() != nil && err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = errors.Join(errs...)
		}
	}()

	timer := time.NewTimer(Never)
	defer timer.Stop()
	done := 0
	for {
		elapsed := time.Since(base)
		step := p.Timeline.Due(elapsed, done)
		done = step.Done
		for _, w := range step.End {
			if _, ok := live[w.ID]; ok {
				if herr := p.heal(ctx, base, live, w.ID, records, true); herr != nil {
					errs = append(errs, herr)
				}
			}
		}
		for _, w := range step.Start {
			if ctx.Err() != nil {
				return records, ctx.Err()
			}
			rec := Record{Window: w.ID, Fault: w.Name, Layer: w.Fault.Layer(),
				PlannedStart: w.Start, PlannedEnd: w.End, Start: time.Since(base)}
			heal, ierr := w.Fault.Inject(ctx, p.Target)
			if ierr != nil {
				rec.End = rec.Start
				rec.Error = ierr.Error()
				rec.Evidence = w.Fault.Evidence()
				records = append(records, rec)
				ierr = fmt.Errorf("window %d at %v: %w", w.ID, w.Start, ierr)
				if p.StopOnError {
					return records, ierr
				}
				errs = append(errs, ierr)
				continue
			}
			rec.Applied = true
			records = append(records, rec)
			live[w.ID] = active{heal: heal, rec: len(records) - 1}
			if p.OnStart != nil {
				p.OnStart(rec)
			}
		}
		// A window that started and ended within this step (play fell
		// behind) is healed at once rather than left on.
		for _, w := range step.End {
			if _, ok := live[w.ID]; ok {
				if herr := p.heal(ctx, base, live, w.ID, records, true); herr != nil {
					errs = append(errs, herr)
				}
			}
		}
		if step.Next == Never {
			return records, nil
		}
		timer.Reset(time.Until(base.Add(step.Next)))
		select {
		case <-ctx.Done():
			return records, ctx.Err()
		case <-timer.C:
		}
	}
}

// heal runs the heal of window id with a fresh bounded context and completes
// its record; callback says whether OnEnd may be called (not on the way out
// of a panic or cancel, where the run is already over).
func (p *Player) heal(ctx context.Context, base time.Time, live map[int]active, id int, records []Record, callback bool) error {
	a := live[id]
	delete(live, id)
	timeout := p.HealTimeout
	if timeout <= 0 {
		timeout = DefaultHealTimeout
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	herr := a.heal(hctx)
	rec := &records[a.rec]
	rec.End = time.Since(base)
	rec.Evidence = p.Timeline.Windows[id].Fault.Evidence()
	if herr != nil {
		herr = fmt.Errorf("window %d: %w", id, herr)
		rec.Error = herr.Error()
	}
	if callback && p.OnEnd != nil {
		p.OnEnd(*rec)
	}
	return herr
}
