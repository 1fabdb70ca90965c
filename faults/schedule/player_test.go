package schedule_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/faults/schedule"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// probe is a fault that only counts: it shows what the player did.
type probe struct {
	name string
	fail error

	mu                    sync.Mutex
	injects, heals, alive int
}

func (p *probe) Name() string        { return p.name }
func (p *probe) Layer() faults.Layer { return faults.LayerClient }
func (p *probe) Inject(context.Context, faults.Target) (faults.Heal, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.injects++
	p.alive++
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.heals++
			p.alive--
		})
		return nil
	}, nil
}
func (p *probe) Evidence() faults.Evidence {
	p.mu.Lock()
	defer p.mu.Unlock()
	return faults.Evidence{Fault: p.name, Effective: p.injects > 0, Counters: map[string]int64{"injects": int64(p.injects)}}
}
func (p *probe) counts() (injects, heals, alive int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injects, p.heals, p.alive
}

func plan(t *testing.T, entries ...schedule.Entry) schedule.Timeline {
	t.Helper()
	tl, err := schedule.Plan(7, entries, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestPlayerPlaysTimeline(t *testing.T) {
	a, b := &probe{name: "a"}, &probe{name: "b"}
	tl := plan(t,
		schedule.Entry{Fault: a, For: schedule.Fixed(20 * time.Millisecond), Every: 40 * time.Millisecond, Count: 2},
		schedule.Entry{Fault: b, At: schedule.Fixed(10 * time.Millisecond), For: schedule.Fixed(20 * time.Millisecond)},
	)
	var ends int
	p := &schedule.Player{Target: faketarget.New(), Timeline: tl, OnEnd: func(schedule.Record) { ends++ }}
	recs, err := p.Play(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || ends != 3 {
		t.Fatalf("%d records, %d OnEnd calls, want 3: %+v", len(recs), ends, recs)
	}
	for _, r := range recs {
		if !r.Applied || r.Error != "" || r.Start < r.PlannedStart || r.End < r.PlannedEnd || !r.Evidence.Effective {
			t.Errorf("record %+v", r)
		}
	}
	if i, h, al := a.counts(); i != 2 || h != 2 || al != 0 {
		t.Errorf("a: %d injects, %d heals, %d alive", i, h, al)
	}
	if i, h, al := b.counts(); i != 1 || h != 1 || al != 0 {
		t.Errorf("b: %d injects, %d heals, %d alive", i, h, al)
	}
}

func TestPlayerInjectErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, stop := range []bool{false, true} {
		bad, good, later := &probe{name: "bad", fail: boom}, &probe{name: "good"}, &probe{name: "later"}
		tl := plan(t,
			schedule.Entry{Fault: good, For: schedule.Fixed(time.Hour)},
			schedule.Entry{Fault: bad, At: schedule.Fixed(time.Millisecond), For: schedule.Fixed(time.Millisecond)},
			schedule.Entry{Fault: later, At: schedule.Fixed(5 * time.Millisecond), For: schedule.Fixed(time.Millisecond)},
		)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p := &schedule.Player{Target: faketarget.New(), Timeline: tl, StopOnError: stop}
		if !stop {
			// Without StopOnError play goes on; end it once "later" healed.
			p.OnEnd = func(r schedule.Record) {
				if r.Fault == "later" {
					cancel()
				}
			}
		}
		recs, err := p.Play(ctx, time.Now())
		cancel()
		if !errors.Is(err, boom) && !(errors.Is(err, context.Canceled) && !stop) {
			t.Errorf("stop=%v: err %v", stop, err)
		}
		if len(recs) < 2 || recs[1].Fault != "bad" || recs[1].Applied || recs[1].Error == "" {
			t.Errorf("stop=%v: records %+v", stop, recs)
		}
		if _, _, alive := good.counts(); alive != 0 {
			t.Errorf("stop=%v: good left applied", stop)
		}
		if i, _, _ := later.counts(); (i == 0) != stop {
			t.Errorf("stop=%v: later injected %d times", stop, i)
		}
	}
}

func TestPlayerHealsOnCancel(t *testing.T) {
	f := &probe{name: "long"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &schedule.Player{Target: faketarget.New(), Timeline: plan(t, schedule.Entry{Fault: f, For: schedule.Fixed(time.Hour)}),
		OnStart: func(schedule.Record) { cancel() }}
	recs, err := p.Play(ctx, time.Now())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want canceled", err)
	}
	if _, h, alive := f.counts(); h != 1 || alive != 0 {
		t.Errorf("heals %d alive %d", h, alive)
	}
	if len(recs) != 1 || recs[0].End == 0 {
		t.Errorf("records %+v", recs)
	}
}

func TestPlayerHealsOnPanic(t *testing.T) {
	f := &probe{name: "long"}
	p := &schedule.Player{Target: faketarget.New(), Timeline: plan(t, schedule.Entry{Fault: f, For: schedule.Fixed(time.Hour)}),
		OnStart: func(schedule.Record) { panic("callback broke") }}
	func() {
		defer func() {
			if r := recover(); r != "callback broke" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		_, _ = p.Play(context.Background(), time.Now())
	}()
	if _, h, alive := f.counts(); h != 1 || alive != 0 {
		t.Errorf("heals %d alive %d", h, alive)
	}
}
