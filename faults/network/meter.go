package network

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// meter is a counting TCP relay from the proxy to a link's address. It is
// how faults learn what traffic passed while they were active.
type meter struct {
	ln       net.Listener
	upstream string

	accepted atomic.Int64
	closed   atomic.Int64
	up       atomic.Int64 // bytes proxy → link address (after upstream toxics)
	down     atomic.Int64 // bytes link address → proxy (before downstream toxics)

	resets atomic.Int64 // connections reset by a ResetPeer rule
	rule   atomic.Pointer[resetRule]

	mu   sync.Mutex
	open map[net.Conn]struct{}
	wg   sync.WaitGroup
}

// resetRule is an active ResetPeer: the relay resets a connection once data
// has flowed on the stream for After since the rule (or the connection's
// first data under it) began. It lives here rather than in Toxiproxy's
// reset_peer toxic, which leaks a goroutine per reset connection.
type resetRule struct {
	stream Stream
	after  time.Duration
	since  time.Time
}

// counts is a snapshot of a meter's counters.
type counts struct {
	accepted, closed, up, down, active int64
}

func (c counts) sub(o counts) counts {
	return counts{c.accepted - o.accepted, c.closed - o.closed, c.up - o.up, c.down - o.down, c.active}
}

func startMeter(upstream string) (*meter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &meter{ln: ln, upstream: upstream, open: map[net.Conn]struct{}{}}
	m.wg.Add(1)
	go m.serve()
	return m, nil
}

func (m *meter) addr() string { return m.ln.Addr().String() }

func (m *meter) snapshot() counts {
	m.mu.Lock()
	active := int64(len(m.open)) / 2
	m.mu.Unlock()
	return counts{m.accepted.Load(), m.closed.Load(), m.up.Load(), m.down.Load(), active}
}

func (m *meter) serve() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			return
		}
		m.accepted.Add(1)
		u, err := net.DialTimeout("tcp", m.upstream, 10*time.Second)
		if err != nil {
			c.Close()
			m.closed.Add(1)
			continue
		}
		if !m.track(c, u) {
			return
		}
		m.wg.Add(1)
		go m.relay(c, u)
	}
}

// track registers a pair; false once the meter is closing.
func (m *meter) track(c, u net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open == nil {
		c.Close()
		u.Close()
		return false
	}
	m.open[c] = struct{}{}
	m.open[u] = struct{}{}
	return true
}

func (m *meter) relay(c, u net.Conn) {
	defer m.wg.Done()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.pipe(u, c, &m.up, Upstream, c, u)
		c.Close()
		u.Close()
	}()
	m.pipe(c, u, &m.down, Downstream, c, u)
	c.Close()
	u.Close()
	<-done
	m.mu.Lock()
	if m.open != nil {
		delete(m.open, c)
		delete(m.open, u)
	}
	m.mu.Unlock()
	m.closed.Add(1)
}

// pipe copies src to dst, counting bytes, and resets both connections of
// the pair when an active reset rule on this stream says so.
func (m *meter) pipe(dst, src net.Conn, n *atomic.Int64, stream Stream, c, u net.Conn) {
	buf := make([]byte, 32<<10)
	var first time.Time
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if r := m.rule.Load(); r != nil && r.stream == stream {
				if first.Before(r.since) {
					first = time.Now()
				}
				if time.Since(first) >= r.after {
					m.resets.Add(1)
					reset(c)
					reset(u)
					return
				}
			}
			w, werr := dst.Write(buf[:k])
			n.Add(int64(w))
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// reset closes a TCP connection with an RST rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// close stops accepting, cuts every relayed connection and waits for the
// relay goroutines.
func (m *meter) close() {
	m.ln.Close()
	m.mu.Lock()
	for c := range m.open {
		c.Close()
	}
	m.open = nil
	m.mu.Unlock()
	m.wg.Wait()
}
