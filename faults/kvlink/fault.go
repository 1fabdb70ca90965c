package kvlink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// Chunks is the kv-chunks fault: a relay on a KV link that delays,
// reorders or drops individual chunks by Rules, drawing from Rand.
type Chunks struct {
	// Link is the KV link, e.g. contract.KVLink(0).
	Link string
	// Rules say what happens to each chunk.
	Rules Rules
	// Rand is the run's seeded source; each injection takes a sub-source.
	Rand *rand.Rand

	mu    sync.Mutex
	live  []*Relay
	total Stats
}

// Name says what and where, e.g. "kv-chunks(kv/0,drop=1%,reorder=20%/1,delay=10%)".
func (f *Chunks) Name() string {
	return fmt.Sprintf("kv-chunks(%s,drop=%d%%,reorder=%d%%/%d,delay=%d%%)", f.Link, f.Rules.DropPct, f.Rules.ReorderPct,
		f.Rules.after(), f.Rules.DelayPct)
}

// Layer is protocol: the relay parses the KV link's framing.
func (f *Chunks) Layer() faults.Layer { return faults.LayerProtocol }

// Validate checks the fields without applying anything.
func (f *Chunks) Validate() error {
	switch {
	case f.Link == "":
		return fmt.Errorf("inject %s: field Link: empty", f.Name())
	case f.Rand == nil:
		return fmt.Errorf("inject %s: field Rand: no seeded random source", f.Name())
	case f.Rules.DropPct+f.Rules.ReorderPct+f.Rules.DelayPct == 0:
		return fmt.Errorf("inject %s: field Rules: every percentage is 0, the fault would do nothing", f.Name())
	}
	if err := f.Rules.Validate(); err != nil {
		return fmt.Errorf("inject %s: %w", f.Name(), err)
	}
	return nil
}

// Preflight says whether t offers the link as a KV link.
func (f *Chunks) Preflight(t faults.Target) error {
	_, err := f.link(t)
	return err
}

func (f *Chunks) link(t faults.Target) (contract.Link, error) {
	var names []string
	for _, l := range t.Links() {
		if l.Name == f.Link {
			if l.Kind != contract.LinkKV {
				return l, fmt.Errorf("inject %s: link %s carries %s, not kv: %w", f.Name(), f.Link, l.Kind, contract.ErrUnsupported)
			}
			return l, nil
		}
		names = append(names, l.Name)
	}
	return contract.Link{}, fmt.Errorf("inject %s: no link %q (links: %s): %w", f.Name(), f.Link, strings.Join(names, ", "), contract.ErrUnsupported)
}

// Inject starts a relay in front of the link and interposes it. On any
// error nothing is left: no listener, no goroutine, the link as it was.
func (f *Chunks) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	l, err := f.link(t)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("inject %s: %w", f.Name(), err)
	}
	f.mu.Lock()
	rnd := rand.New(rand.NewPCG(f.Rand.Uint64(), f.Rand.Uint64()))
	f.mu.Unlock()
	r, err := Listen(ctx, l.Addr, f.Rules, rnd)
	if err != nil {
		return nil, fmt.Errorf("inject %s: %w", f.Name(), err)
	}
	restore, err := t.Interpose(ctx, f.Link, r.Addr())
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
		if restore != nil {
			_ = restore(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("inject %s: interpose relay: %w", f.Name(), err)
	}
	f.mu.Lock()
	f.live = append(f.live, r)
	f.mu.Unlock()
	var once sync.Once
	var healErr error
	return func(ctx context.Context) error {
		once.Do(func() {
			var errs []error
			if err := r.Release(ctx); err != nil {
				errs = append(errs, err)
			}
			if restore != nil {
				if err := restore(ctx); err != nil {
					errs = append(errs, fmt.Errorf("restore link: %w", err))
				}
			}
			if err := r.Close(); err != nil {
				errs = append(errs, err)
			}
			f.retire(r)
			if err := errors.Join(errs...); err != nil {
				healErr = fmt.Errorf("heal %s: %w", f.Name(), err)
			}
		})
		return healErr
	}, nil
}

func (f *Chunks) retire(r *Relay) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, q := range f.live {
		if q == r {
			f.live = append(f.live[:i], f.live[i+1:]...)
			f.total = f.total.add(r.Stats())
			return
		}
	}
}

// Stats sums finished and live injections.
func (f *Chunks) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.total
	for _, r := range f.live {
		s = s.add(r.Stats())
	}
	return s
}

// Evidence is effective once a chunk was truly overtaken, delayed or
// dropped; holds nothing overtook prove nothing.
func (f *Chunks) Evidence() faults.Evidence {
	s := f.Stats()
	ev := faults.Evidence{Fault: f.Name(), Effective: s.Reordered+s.Delayed+s.Dropped > 0,
		Counters: map[string]int64{"chunks": s.Chunks, "aux": s.Aux, "conns": s.Conns, "reordered": s.Reordered, "reordered_in_room": s.ReorderedInRoom,
			"held": s.Held, "timed_out": s.TimedOut, "delayed": s.Delayed, "delay_ms": s.DelayMs, "released": s.Released,
			"dropped": s.Dropped, "malformed": s.Malformed}}
	if !ev.Effective {
		ev.Detail = fmt.Sprintf("%d chunks seen; none overtaken, delayed or dropped", s.Chunks)
	}
	return ev
}
