package protocol

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// injector is the shared body of every protocol fault: it owns the proxies
// of its injections and sums their counters for Evidence.
type injector struct {
	mu    sync.Mutex
	live  []*Proxy
	total Stats
}

// inject starts a proxy with rules in front of link and interposes it.
// On any error nothing is left: no listener, no goroutine.
func (in *injector) inject(ctx context.Context, t faults.Target, name, link string, rules []Rule) (faults.Heal, error) {
	var l *contract.Link
	for _, cand := range t.Links() {
		if cand.Name == link {
			l = &cand
			break
		}
	}
	if l == nil {
		return nil, fmt.Errorf("inject %s: no link %q: %w", name, link, contract.ErrUnsupported)
	}
	if l.Kind != contract.LinkZMTP {
		return nil, fmt.Errorf("inject %s: link %s carries %s, not zmtp: %w", name, link, l.Kind, contract.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, link, err)
	}
	p, err := Listen(ctx, l.Addr, rules...)
	if err != nil {
		return nil, fmt.Errorf("inject %s on link %s: %w", name, link, err)
	}
	restore, err := t.Interpose(ctx, link, p.Addr())
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
		if restore != nil {
			_ = restore(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("inject %s on link %s: interpose proxy: %w", name, link, err)
	}
	in.mu.Lock()
	in.live = append(in.live, p)
	in.mu.Unlock()
	var once sync.Once
	var healErr error
	heal := func(ctx context.Context) error {
		once.Do(func() {
			var errs []string
			if err := p.Release(ctx); err != nil {
				errs = append(errs, err.Error())
			}
			if restore != nil {
				if err := restore(ctx); err != nil {
					errs = append(errs, "restore link: "+err.Error())
				}
			}
			if err := p.Close(); err != nil {
				errs = append(errs, err.Error())
			}
			in.retire(p)
			if len(errs) > 0 {
				healErr = fmt.Errorf("heal %s on link %s: %s", name, link, strings.Join(errs, "; "))
			}
		})
		return healErr
	}
	return heal, nil
}

func (in *injector) retire(p *Proxy) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, q := range in.live {
		if q == p {
			in.live = append(in.live[:i], in.live[i+1:]...)
			in.total = addStats(in.total, p.Stats())
			return
		}
	}
}

func addStats(a, b Stats) Stats {
	s := Stats{Seen: make(map[Kind]int64)}
	for k, v := range a.Seen {
		s.Seen[k] += v
	}
	for k, v := range b.Seen {
		s.Seen[k] += v
	}
	s.Matched = a.Matched + b.Matched
	s.Held = a.Held + b.Held
	s.Released = a.Released + b.Released
	s.Reordered = a.Reordered + b.Reordered
	s.Overtaken = a.Overtaken + b.Overtaken
	s.TimedOut = a.TimedOut + b.TimedOut
	s.Dropped = a.Dropped + b.Dropped
	s.Duplicated = a.Duplicated + b.Duplicated
	s.Corrupted = a.Corrupted + b.Corrupted
	s.Delayed = a.Delayed + b.Delayed
	s.DelayMs = a.DelayMs + b.DelayMs
	s.Conns = a.Conns + b.Conns
	return s
}

// stats sums finished and live injections.
func (in *injector) stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := addStats(in.total, Stats{})
	for _, p := range in.live {
		s = addStats(s, p.Stats())
	}
	return s
}

// evidence turns stats into faults.Evidence; effective says which counter
// proves the fault acted.
func (in *injector) evidence(name string, effective func(Stats) bool) faults.Evidence {
	s := in.stats()
	c := map[string]int64{
		"held": s.Held, "released": s.Released, "reordered": s.Reordered, "overtaken": s.Overtaken,
		"timed_out": s.TimedOut, "dropped": s.Dropped,
		"duplicated": s.Duplicated, "corrupted": s.Corrupted, "delayed": s.Delayed, "delay_ms": s.DelayMs,
		"matched": s.Matched, "conns": s.Conns,
	}
	for k, v := range s.Seen {
		c["seen_"+string(k)] = v
	}
	// Messages no layout fits passed untouched by every rule: always
	// shown, so a fault that saw only those is not mistaken for a quiet one.
	c["unknown"] = s.Seen[KindUnknown]
	ev := faults.Evidence{Fault: name, Effective: effective(s), Counters: c}
	if !ev.Effective {
		ev.Detail = "no message matched the fault's rule"
		if n := s.Seen[KindUnknown]; n > 0 {
			ev.Detail += fmt.Sprintf("; %d message(s) of unknown layout passed untouched", n)
		}
	}
	return ev
}

func kindsName(ks []Kind) string {
	if len(ks) == 0 {
		return "all"
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = string(k)
	}
	return strings.Join(parts, "+")
}

// DelayMessages delays matching messages on a ZMTP link by a duration in
// [Min, Max], drawn from Rand (seeded by the caller; required when Max >
// Min). Use it to delay registrations or ABORTs.
type DelayMessages struct {
	Link     string
	Kinds    []Kind
	Rooms    []uint64
	Min, Max time.Duration
	Rand     *rand.Rand
	// KeepOrder delays everything behind a delayed message (a slow link)
	// instead of letting later messages overtake it.
	KeepOrder bool
	inj       injector
}

// Name implements faults.Fault.
func (f *DelayMessages) Name() string {
	return fmt.Sprintf("delay-messages(%s,%s,%v-%v)", f.Link, kindsName(f.Kinds), f.Min, f.Max)
}

// Layer implements faults.Fault.
func (f *DelayMessages) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *DelayMessages) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if f.Min < 0 || f.Max < f.Min {
		return nil, fmt.Errorf("inject %s: need 0 <= Min <= Max", f.Name())
	}
	if f.Max > f.Min && f.Rand == nil {
		return nil, fmt.Errorf("inject %s: Rand is required when Max > Min (seeded source)", f.Name())
	}
	delay := func(Message) time.Duration {
		if f.Max == f.Min {
			return f.Min
		}
		f.inj.mu.Lock()
		defer f.inj.mu.Unlock()
		return f.Min + time.Duration(f.Rand.Int64N(int64(f.Max-f.Min)+1))
	}
	r := Rule{Kinds: f.Kinds, Rooms: f.Rooms, Action: ActDelay, Delay: delay, KeepOrder: f.KeepOrder}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a message was delayed.
func (f *DelayMessages) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Delayed > 0 })
}

// AbortBeforeMetadata holds each room's metadata until that room's ABORT
// has been forwarded, so prefill sees the ABORT first (the
// abort-before-status race). MaxHold > 0 lets metadata of rooms that are
// never aborted through after that long; 0 holds them until Heal.
type AbortBeforeMetadata struct {
	Link    string
	Rooms   []uint64
	MaxHold time.Duration
	inj     injector
}

// Name implements faults.Fault.
func (f *AbortBeforeMetadata) Name() string {
	return fmt.Sprintf("abort-before-metadata(%s)", f.Link)
}

// Layer implements faults.Fault.
func (f *AbortBeforeMetadata) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *AbortBeforeMetadata) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	r := Rule{Kinds: []Kind{KindMetadata}, Rooms: f.Rooms, Action: ActHold, ReleaseOnAbort: true, MaxHold: f.MaxHold}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a held metadata went out
// behind its room's ABORT. Metadata released by MaxHold (timed_out) or
// written after unrelated messages (reordered) proves nothing.
func (f *AbortBeforeMetadata) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Overtaken > 0 })
}

// HoldMessages holds each matching message until After later messages have
// been forwarded (or MaxHold passes): a generic reorder.
type HoldMessages struct {
	Link    string
	Kinds   []Kind
	Rooms   []uint64
	After   int
	MaxHold time.Duration
	inj     injector
}

// Name implements faults.Fault.
func (f *HoldMessages) Name() string {
	return fmt.Sprintf("hold-messages(%s,%s,after=%d)", f.Link, kindsName(f.Kinds), f.After)
}

// Layer implements faults.Fault.
func (f *HoldMessages) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *HoldMessages) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if f.After <= 0 && f.MaxHold <= 0 {
		return nil, fmt.Errorf("inject %s: need After > 0 or MaxHold > 0", f.Name())
	}
	r := Rule{Kinds: f.Kinds, Rooms: f.Rooms, Action: ActHold, ReleaseAfter: f.After, MaxHold: f.MaxHold}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a message was held.
func (f *HoldMessages) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Held > 0 })
}

// Drop discards matching messages (at most Limit, 0 = all), like a libzmq
// PUSH losing its queue on reconnect.
type Drop struct {
	Link  string
	Kinds []Kind
	Rooms []uint64
	Match func(Message) bool
	Limit int
	inj   injector
}

// Name implements faults.Fault.
func (f *Drop) Name() string { return fmt.Sprintf("drop(%s,%s)", f.Link, kindsName(f.Kinds)) }

// Layer implements faults.Fault.
func (f *Drop) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *Drop) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	r := Rule{Kinds: f.Kinds, Rooms: f.Rooms, Match: f.Match, Limit: f.Limit, Action: ActDrop}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a message was dropped.
func (f *Drop) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Dropped > 0 })
}

// Duplicate forwards matching messages twice (at most Limit, 0 = all), to
// check that duplicate registrations and ABORTs are harmless.
type Duplicate struct {
	Link  string
	Kinds []Kind
	Rooms []uint64
	Match func(Message) bool
	Limit int
	inj   injector
}

// Name implements faults.Fault.
func (f *Duplicate) Name() string {
	kinds := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		kinds[i] = string(k)
	}
	return faults.DuplicateName(f.Link, kinds)
}

// Layer implements faults.Fault.
func (f *Duplicate) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *Duplicate) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	r := Rule{Kinds: f.Kinds, Rooms: f.Rooms, Match: f.Match, Limit: f.Limit, Action: ActDuplicate}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a message was duplicated.
func (f *Duplicate) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Duplicated > 0 })
}

// Corrupt forwards matching messages corrupted by Mode (at most Limit, 0 =
// all), so the receiver must refuse what it cannot parse, count it, and
// let the room's deadlines end what the lost message would have.
type Corrupt struct {
	Link  string
	Kinds []Kind
	Rooms []uint64
	Match func(Message) bool
	Limit int
	// Mode is faults.CorruptTruncate or faults.CorruptGarble; empty: garble.
	Mode string
	inj  injector
}

// Name implements faults.Fault.
func (f *Corrupt) Name() string {
	kinds := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		kinds[i] = string(k)
	}
	return faults.CorruptName(f.Link, kinds, f.mode())
}

func (f *Corrupt) mode() string {
	if f.Mode == "" {
		return faults.CorruptGarble
	}
	return f.Mode
}

// Layer implements faults.Fault.
func (f *Corrupt) Layer() faults.Layer { return faults.LayerProtocol }

// Inject implements faults.Fault.
func (f *Corrupt) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	mode := f.mode()
	if mode != faults.CorruptTruncate && mode != faults.CorruptGarble {
		return nil, fmt.Errorf("inject %s: field Mode: %q is not one of %s", f.Name(), f.Mode, strings.Join(faults.CorruptModes(), ", "))
	}
	r := Rule{Kinds: f.Kinds, Rooms: f.Rooms, Match: f.Match, Limit: f.Limit, Action: ActCorrupt,
		Corrupt: func(m Message) [][]byte { return faults.CorruptFrames(m.Frames, mode) }}
	return f.inj.inject(ctx, t, f.Name(), f.Link, []Rule{r})
}

// Evidence implements faults.Fault: effective once a message was corrupted.
func (f *Corrupt) Evidence() faults.Evidence {
	return f.inj.evidence(f.Name(), func(s Stats) bool { return s.Corrupted > 0 })
}

var (
	_ faults.Fault = (*Corrupt)(nil)
	_ faults.Fault = (*DelayMessages)(nil)
	_ faults.Fault = (*AbortBeforeMetadata)(nil)
	_ faults.Fault = (*HoldMessages)(nil)
	_ faults.Fault = (*Drop)(nil)
	_ faults.Fault = (*Duplicate)(nil)
)
