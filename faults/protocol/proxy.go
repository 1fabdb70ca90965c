package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/zmtp"
)

// CloseFlushTimeout bounds how long Close spends delivering released
// messages before it drops the connections.
const CloseFlushTimeout = 2 * time.Second

// Stats counts what a proxy saw and did, as fault evidence.
type Stats struct {
	Seen      map[Kind]int64 `json:"seen"`
	Matched   int64          `json:"matched"`
	Held      int64          `json:"held"`
	Released  int64          `json:"released"`
	Reordered int64          `json:"reordered"`
	// Overtaken counts held messages that went out behind their room's
	// ABORT: the ABORT really overtook them.
	Overtaken int64 `json:"overtaken"`
	// TimedOut counts held messages released by MaxHold, with nothing
	// having overtaken them for the reason the rule held them.
	TimedOut   int64 `json:"timed_out"`
	Dropped    int64 `json:"dropped"`
	Duplicated int64 `json:"duplicated"`
	Corrupted  int64 `json:"corrupted"`
	Delayed    int64 `json:"delayed"`
	DelayMs    int64 `json:"delay_ms"`
	Conns      int64 `json:"conns"`
}

// Proxy is a ZMTP frame proxy: it listens, forwards each connection to an
// upstream PULL, parses the PUSH→PULL direction into messages and applies
// rules to them. See the package doc.
type Proxy struct {
	upstream string
	ln       net.Listener
	ctx      context.Context // lives until Close; bounds upstream dials
	cancel   context.CancelFunc

	mu        sync.Mutex
	rules     []Rule
	conns     map[*pconn]struct{}
	closed    bool
	seq       uint64
	forwarded uint64
	held      []*entry
	aborted   map[uint64]struct{}
	stats     Stats
	progress  chan struct{} // closed and replaced when output is written

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Listen starts a proxy on 127.0.0.1:0 forwarding to upstream (host:port or
// tcp://host:port) with the given rules (none: transparent). ctx bounds the
// bind only.
func Listen(ctx context.Context, upstream string, rules ...Rule) (*Proxy, error) {
	return ListenOn(ctx, "127.0.0.1:0", upstream, rules...)
}

// ListenOn is Listen on a chosen address, for a proxy that peers on other
// hosts must reach.
func ListenOn(ctx context.Context, addr, upstream string, rules ...Rule) (*Proxy, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen frame proxy for %s: %w", upstream, err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Proxy{
		upstream: trimTCP(upstream),
		ln:       ln,
		ctx:      pctx,
		cancel:   cancel,
		rules:    slices.Clone(rules),
		conns:    make(map[*pconn]struct{}),
		aborted:  make(map[uint64]struct{}),
		stats:    Stats{Seen: make(map[Kind]int64)},
		progress: make(chan struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func trimTCP(a string) string {
	if len(a) > 6 && a[:6] == "tcp://" {
		return a[6:]
	}
	return a
}

// Addr is the proxy's listening host:port, to give to Interpose or a
// RouteRewriter.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRules replaces the active rules; messages already held or delayed keep
// their schedule.
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	p.rules = slices.Clone(rules)
	p.mu.Unlock()
}

// Stats returns a copy of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Seen = maps.Clone(p.stats.Seen)
	return s
}

// Release turns every rule off, releases all held and delayed messages in
// arrival order and waits until they are written (or ctx ends). After it
// the proxy is transparent again.
func (p *Proxy) Release(ctx context.Context) error {
	p.mu.Lock()
	p.rules = nil
	var now time.Time // before anything queued: held messages go first, in arrival order
	for c := range p.conns {
		for _, e := range slices.Clone(c.h) {
			if e.held {
				p.stats.Released++
			}
			c.releaseAt(e, now)
		}
		c.lastAt = time.Time{}
	}
	p.held = nil
	clear(p.aborted)
	p.mu.Unlock()
	for {
		p.mu.Lock()
		pending := false
		for c := range p.conns {
			if c.h.Len() > 0 || c.writing {
				pending = true
				break
			}
		}
		progress := p.progress
		p.mu.Unlock()
		if !pending {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return fmt.Errorf("release held messages: %w", ctx.Err())
		}
	}
}

// Close releases held messages (best effort, CloseFlushTimeout), closes the
// listener and every connection, and waits for all goroutines.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		err = p.ln.Close()
		ctx, cancel := context.WithTimeout(p.ctx, CloseFlushTimeout)
		_ = p.Release(ctx)
		cancel()
		p.cancel()
		p.mu.Lock()
		p.closed = true
		conns := slices.Collect(maps.Keys(p.conns))
		p.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
		p.wg.Wait()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close frame proxy: %w", err)
	}
	return nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// pconn is one proxied connection pair.
type pconn struct {
	client, up net.Conn
	h          entryHeap
	notify     chan struct{}
	done       chan struct{}
	closeOnce  sync.Once
	readerDone bool
	writing    bool
	lastAt     time.Time // KeepOrder: nothing on this conn goes before it
	maxWritten uint64
}

func (c *pconn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.up.Close()
	})
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	dctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	up, err := d.DialContext(dctx, "tcp", p.upstream)
	cancel()
	if err != nil {
		_ = client.Close() // the peer reconnects, as it would to a dead upstream
		return
	}
	c := &pconn{client: client, up: up, notify: make(chan struct{}, 1), done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.stats.Conns++
	p.mu.Unlock()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.signal()
		p.mu.Unlock()
	}()
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(c) })
	wg.Go(func() {
		// PULL→PUSH (READY, PONG) is copied raw; when upstream goes away the pair ends.
		buf := make([]byte, 32<<10)
		_, _ = io.CopyBuffer(client, up, buf)
		c.close()
	})
	p.read(c)
	wg.Wait()
}

// read parses the PUSH→PULL direction: relays the greeting as it arrives
// (libzmq sends it in parts and waits), then queues commands as they come
// and messages whole, through the rules.
func (p *Proxy) read(c *pconn) {
	br := bufio.NewReaderSize(c.client, 64<<10)
	greeting := make([]byte, 0, zmtp.GreetingSize)
	buf := make([]byte, zmtp.GreetingSize)
	for len(greeting) < zmtp.GreetingSize {
		n, err := br.Read(buf[:zmtp.GreetingSize-len(greeting)])
		if n > 0 {
			if _, werr := c.up.Write(buf[:n]); werr != nil {
				c.close()
				return
			}
			greeting = append(greeting, buf[:n]...)
		}
		if err != nil {
			p.readerEnd(c, err)
			return
		}
	}
	if _, err := zmtp.ParseGreeting(greeting); err != nil {
		// Not ZMTP 3.x: stay a plain TCP relay for this connection.
		_, err := io.CopyBuffer(c.up, br, make([]byte, 32<<10))
		p.readerEnd(c, err)
		return
	}
	var raw []byte
	var frames [][]byte
	for {
		f, err := zmtp.ReadFrame(br)
		if err != nil {
			p.readerEnd(c, err)
			return
		}
		raw = zmtp.AppendFrame(raw, f)
		if f.IsCommand() {
			if len(frames) == 0 {
				p.queue(c, raw, nil)
				raw = nil
			}
			continue // a command inside a message stays in place in raw
		}
		frames = append(frames, f.Body)
		if f.More() {
			continue
		}
		kind, room, hasRoom := Classify(frames)
		p.queue(c, raw, &Message{Frames: frames, Kind: kind, Room: room, HasRoom: hasRoom})
		raw, frames = nil, nil
	}
}

// readerEnd: a clean EOF lets the pump flush and half-close upstream;
// anything else ends the pair.
func (p *Proxy) readerEnd(c *pconn, err error) {
	if err == nil || errors.Is(err, io.EOF) {
		p.mu.Lock()
		c.readerDone = true
		c.wake()
		p.mu.Unlock()
		return
	}
	c.close()
}

// signal wakes Release waiters. Caller holds p.mu.
func (p *Proxy) signal() {
	close(p.progress)
	p.progress = make(chan struct{})
}

// pump writes due entries to upstream in (time, arrival) order.
func (p *Proxy) pump(c *pconn) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		batch, wait := p.due(c, time.Now())
		finished := len(batch) == 0 && c.readerDone && c.h.Len() == 0
		c.writing = len(batch) > 0
		p.mu.Unlock()
		if finished {
			if tc, ok := c.up.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
		if len(batch) > 0 {
			bufs := make(net.Buffers, 0, len(batch))
			for _, e := range batch {
				bufs = append(bufs, e.raw)
			}
			_, err := bufs.WriteTo(c.up)
			p.mu.Lock()
			c.writing = false
			if err == nil {
				for _, e := range batch {
					p.written(e)
				}
			}
			p.signal()
			p.mu.Unlock()
			if err != nil {
				c.close()
				return
			}
			continue
		}
		var tick <-chan time.Time
		if wait >= 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tick = timer.C
		}
		select {
		case <-c.notify:
		case <-tick:
		case <-c.done:
			return
		}
	}
}
