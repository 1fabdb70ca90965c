package kvlink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// CloseFlushTimeout bounds how long Close waits for messages in flight (and
// the aux message owed after a last chunk) before it cuts the connections.
const CloseFlushTimeout = 2 * time.Second

// Rules say what the relay does to each KV chunk. The percentages are of
// chunks seen while the rules are active and are drawn per chunk from the
// relay's seeded source; they add up to at most 100, the rest pass
// untouched. The zero value is transparent.
type Rules struct {
	// DropPct of chunks are not forwarded: both connections are closed, so
	// prefill's write completion fails.
	DropPct int
	// ReorderPct of chunks are held until AfterChunks chunks that reached
	// the relay after them were applied by decode, or MaxHold passed.
	ReorderPct int
	// AfterChunks is how many later chunks must overtake a held one;
	// 0 means 1.
	AfterChunks int
	// MaxHold bounds a reorder hold; 0 means 500ms. A hold that ends by
	// it is counted in TimedOut (and in Reordered only if something did
	// overtake it).
	MaxHold time.Duration
	// DelayPct of chunks are held for a duration drawn from
	// [MinDelay, MaxDelay].
	DelayPct           int
	MinDelay, MaxDelay time.Duration
}

// Validate names the first field out of range.
func (r Rules) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"DropPct", r.DropPct}, {"ReorderPct", r.ReorderPct}, {"DelayPct", r.DelayPct}} {
		if f.v < 0 || f.v > 100 {
			return fmt.Errorf("kv chunk rules: field %s: %d is not in 0..100", f.name, f.v)
		}
	}
	switch {
	case r.DropPct+r.ReorderPct+r.DelayPct > 100:
		return fmt.Errorf("kv chunk rules: DropPct+ReorderPct+DelayPct = %d is over 100", r.DropPct+r.ReorderPct+r.DelayPct)
	case r.AfterChunks < 0:
		return fmt.Errorf("kv chunk rules: field AfterChunks: %d is negative", r.AfterChunks)
	case r.MaxHold < 0:
		return fmt.Errorf("kv chunk rules: field MaxHold: %v is negative", r.MaxHold)
	case r.MinDelay < 0 || r.MaxDelay < r.MinDelay:
		return fmt.Errorf("kv chunk rules: delays [%v, %v] are not a range from 0 up", r.MinDelay, r.MaxDelay)
	case r.DelayPct > 0 && r.MaxDelay <= 0:
		return fmt.Errorf("kv chunk rules: field MaxDelay: DelayPct %d needs MaxDelay > 0", r.DelayPct)
	}
	return nil
}

func (r Rules) after() int {
	if r.AfterChunks <= 0 {
		return 1
	}
	return r.AfterChunks
}

func (r Rules) maxHold() time.Duration {
	if r.MaxHold <= 0 {
		return 500 * time.Millisecond
	}
	return r.MaxHold
}

// Stats count what a relay saw and did: fault evidence.
type Stats struct {
	// Chunks and Aux count messages seen; Conns connections accepted.
	Chunks int64 `json:"chunks"`
	Aux    int64 `json:"aux"`
	Conns  int64 `json:"conns"`
	// Reordered counts held chunks that a later chunk truly overtook: it
	// reached the relay after them and decode applied it while they were
	// still held.
	Reordered int64 `json:"reordered"`
	// ReorderedInRoom counts those a later chunk of their own room
	// overtook: possible only when the engine posts several writes of a
	// room at once (kv_posted_writes > 1).
	ReorderedInRoom int64 `json:"reordered_in_room"`
	// Held counts reorder holds; TimedOut those MaxHold ended.
	Held     int64 `json:"held"`
	TimedOut int64 `json:"timed_out"`
	// Delayed counts delayed chunks and DelayMs their total delay.
	Delayed int64 `json:"delayed"`
	DelayMs int64 `json:"delay_ms"`
	// Released counts holds and delays ended early by Release (heal).
	Released int64 `json:"released"`
	// Dropped counts chunks not forwarded (their connection closed).
	Dropped int64 `json:"dropped"`
	// Malformed counts streams that broke the KV format (a bad header or
	// a message cut short); each is passed on as far as it came and closed.
	Malformed int64 `json:"malformed"`
}

func (s Stats) add(o Stats) Stats {
	return Stats{Chunks: s.Chunks + o.Chunks, Aux: s.Aux + o.Aux, Conns: s.Conns + o.Conns, Reordered: s.Reordered + o.Reordered, ReorderedInRoom: s.ReorderedInRoom + o.ReorderedInRoom,
		Held: s.Held + o.Held, TimedOut: s.TimedOut + o.TimedOut, Delayed: s.Delayed + o.Delayed, DelayMs: s.DelayMs + o.DelayMs,
		Released: s.Released + o.Released, Dropped: s.Dropped + o.Dropped, Malformed: s.Malformed + o.Malformed}
}

// hold is one chunk the relay keeps back.
type hold struct {
	seq       uint64 // arrival order among chunks
	room      uint64
	inRoom    bool          // counted in ReorderedInRoom
	passed    int           // later chunks decode applied while it was held
	overtaken bool          // counted in Reordered
	enough    chan struct{} // closed when passed reaches the rules' AfterChunks
	need      int           // 0: a delay, not a reorder hold
}

// rconn is one relayed connection: prefill's side and decode's.
type rconn struct {
	client, up net.Conn
	busy       bool   // a message or its reply is in flight
	owesAux    bool   // a last chunk passed; its aux message follows
	seq        uint64 // arrival order of its current chunk
	room       uint64 // and its room
}

// Relay is a KV frame relay: it listens, forwards each connection to the
// KV listener upstream, reads prefill's messages whole and applies Rules to
// the chunks. See the package doc.
type Relay struct {
	upstream string
	ln       net.Listener
	ctx      context.Context // lives until Close; bounds dials and holds
	cancel   context.CancelFunc

	mu       sync.Mutex
	rules    Rules
	active   bool
	rand     *rand.Rand
	release  chan struct{} // closed by Release: every hold ends
	conns    map[*rconn]struct{}
	held     map[*hold]struct{}
	seq      uint64
	stats    Stats
	progress chan struct{} // closed and replaced when a connection goes idle or a hold ends

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Listen starts a relay on 127.0.0.1:0 forwarding to upstream (host:port),
// applying rules (drawing from rnd, which only the relay may then use).
// ctx bounds the bind only.
func Listen(ctx context.Context, upstream string, rules Rules, rnd *rand.Rand) (*Relay, error) {
	if err := rules.Validate(); err != nil {
		return nil, err
	}
	if rnd == nil {
		return nil, errors.New("kv relay: no seeded random source")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen kv relay for %s: %w", upstream, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Relay{upstream: upstream, ln: ln, ctx: rctx, cancel: cancel, rules: rules, active: true, rand: rnd,
		release: make(chan struct{}), conns: map[*rconn]struct{}{}, held: map[*hold]struct{}{}, progress: make(chan struct{})}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's listening host:port, to give to Interpose.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// SetRules replaces the rules for chunks that arrive from now on; chunks
// already held keep their schedule. After Release it is refused.
func (r *Relay) SetRules(rules Rules) error {
	if err := rules.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return errors.New("set kv chunk rules: the relay was released")
	}
	r.rules = rules
	return nil
}

// Stats returns a copy of the counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Release turns the rules off, ends every hold and delay at once and waits
// until no chunk is held (or ctx ends). After it the relay is transparent.
func (r *Relay) Release(ctx context.Context) error {
	r.mu.Lock()
	if r.active {
		r.active = false
		close(r.release)
	}
	r.mu.Unlock()
	return r.waitFor(ctx, "release held kv chunks", func() bool { return len(r.held) == 0 })
}

// waitFor waits until done (called under r.mu) holds, or ctx ends.
func (r *Relay) waitFor(ctx context.Context, what string, done func() bool) error {
	for {
		r.mu.Lock()
		ok := done()
		progress := r.progress
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// kick wakes waiters; called under r.mu.
func (r *Relay) kick() {
	close(r.progress)
	r.progress = make(chan struct{})
}

// Close releases held chunks, closes the listener, waits (at most
// CloseFlushTimeout) for messages in flight and owed aux messages, then
// closes every connection and waits for all goroutines.
func (r *Relay) Close() error {
	var err error
	r.closeOnce.Do(func() {
		err = r.ln.Close()
		ctx, cancel := context.WithTimeout(r.ctx, CloseFlushTimeout)
		_ = r.Release(ctx)
		_ = r.waitFor(ctx, "drain kv relay", func() bool {
			for c := range r.conns {
				if c.busy || c.owesAux {
					return false
				}
			}
			return true
		})
		cancel()
		r.cancel()
		r.mu.Lock()
		conns := slices.Collect(maps.Keys(r.conns))
		r.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
		r.wg.Wait()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close kv relay: %w", err)
	}
	return nil
}

func (c *rconn) close() {
	_ = c.client.Close()
	if c.up != nil {
		_ = c.up.Close()
	}
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return // closed: Close owns the listener
		}
		r.wg.Add(1)
		go r.serve(client)
	}
}

// serve relays one connection: a message from prefill, the rules, the
// message to decode, decode's one-byte reply back; repeat.
func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	c := &rconn{client: client}
	dctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
	var d net.Dialer
	up, err := d.DialContext(dctx, "tcp", r.upstream)
	cancel()
	r.mu.Lock()
	if err != nil || r.ctx.Err() != nil {
		r.mu.Unlock()
		_ = client.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	c.up = up
	r.conns[c] = struct{}{}
	r.stats.Conns++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.kick()
		r.mu.Unlock()
		c.close()
	}()
	in, reply := bufio.NewReader(client), bufio.NewReader(up)
	for {
		// Busy from a message's first byte, so Close does not cut one
		// that is half read.
		if _, err := in.Peek(1); err != nil {
			return
		}
		r.mu.Lock()
		c.busy = true
		r.mu.Unlock()
		raw, h, err := contract.ReadKVFrame(in)
		if err != nil {
			if !errors.Is(err, io.EOF) && r.ctx.Err() == nil {
				// Pass the broken stream on as it came, so decode sees
				// (and counts) the same cut or bad frame; then close.
				r.count(func(s *Stats) { s.Malformed++ })
				_, _ = up.Write(raw)
			}
			return
		}
		if h.Kind == contract.KVKindAux {
			r.count(func(s *Stats) { s.Aux++ })
		} else if !r.apply(c, h.Room) {
			return
		}
		if _, err := up.Write(raw); err != nil {
			return
		}
		b, err := reply.ReadByte()
		if err != nil {
			return
		}
		if _, err := client.Write([]byte{b}); err != nil {
			return
		}
		r.mu.Lock()
		if h.Kind == contract.KVKindChunk {
			r.overtake(c)
		}
		c.busy = false
		c.owesAux = h.Kind == contract.KVKindChunk && h.Last && b == contract.KVReplyAccepted
		r.kick()
		r.mu.Unlock()
	}
}

func (r *Relay) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// apply draws the chunk's fate and carries out a hold or delay; false means
// the chunk was dropped (or the relay is closing) and the connection ends.
func (r *Relay) apply(c *rconn, room uint64) bool {
	r.mu.Lock()
	r.stats.Chunks++
	r.seq++
	c.seq, c.room = r.seq, room
	if !r.active {
		r.mu.Unlock()
		return true
	}
	rules := r.rules
	n := r.rand.IntN(100)
	var h *hold
	var wait time.Duration
	switch {
	case n < rules.DropPct:
		r.stats.Dropped++
		r.mu.Unlock()
		return false
	case n < rules.DropPct+rules.ReorderPct:
		h = &hold{seq: r.seq, room: room, need: rules.after(), enough: make(chan struct{})}
		wait = rules.maxHold()
		r.stats.Held++
	case n < rules.DropPct+rules.ReorderPct+rules.DelayPct:
		h = &hold{seq: r.seq, room: room}
		wait = rules.MinDelay + time.Duration(r.rand.Int64N(int64(rules.MaxDelay-rules.MinDelay)+1))
		r.stats.Delayed++
	default:
		r.mu.Unlock()
		return true
	}
	r.held[h] = struct{}{}
	release := r.release
	r.mu.Unlock()

	start := time.Now()
	t := time.NewTimer(wait)
	defer t.Stop()
	var timedOut, released bool
	select {
	case <-h.enough: // nil for a delay: never
	case <-t.C:
		timedOut = true
	case <-release:
		released = true
	case <-r.ctx.Done():
		released = true
	}
	r.mu.Lock()
	delete(r.held, h)
	switch {
	case released:
		r.stats.Released++
	case timedOut && h.need > 0:
		r.stats.TimedOut++
	}
	if h.need == 0 {
		r.stats.DelayMs += time.Since(start).Milliseconds()
	}
	r.kick()
	ok := r.ctx.Err() == nil
	r.mu.Unlock()
	return ok
}

// overtake records that decode applied a chunk of c: every chunk held since
// before it arrived has been overtaken. Called under r.mu.
func (r *Relay) overtake(c *rconn) {
	for h := range r.held {
		if h.seq >= c.seq {
			continue
		}
		h.passed++
		if !h.overtaken {
			h.overtaken = true
			r.stats.Reordered++
		}
		if !h.inRoom && h.room == c.room {
			h.inRoom = true
			r.stats.ReorderedInRoom++
		}
		if h.need > 0 && h.passed == h.need {
			close(h.enough)
		}
	}
}
