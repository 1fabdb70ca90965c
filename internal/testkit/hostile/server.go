package hostile

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Options configure a Server. The zero value of each field is documented.
type Options struct {
	// Behaviour is how the server misbehaves; empty means Healthy.
	Behaviour Behaviour
	// Tick is the pause between the bytes of a Trickle answer, between the
	// chunks of an Endless one, and before a Reset answer is cut; zero
	// means 20ms. Negative means none: an Endless body as fast as the
	// client reads (a test of a size limit that must not wait on timers).
	Tick time.Duration
	// HugeBytes is the length of a Huge body; zero means 1 GiB.
	HugeBytes int64
	// HealthOK spares the health endpoints (/readiness, /health,
	// /health_generate, /liveness): they answer well while the rest
	// misbehaves, as a broken deployment often still passes its health
	// check. A Silent server then reads each request (to tell the paths
	// apart) and answers none but health.
	HealthOK bool
}

// Server is one hostile target on a free loopback port. Close it; it
// closes every connection it holds and waits for its goroutines.
type Server struct {
	o    Options
	ln   net.Listener
	srv  *http.Server // nil when Silent
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // open connections, hijacked ones too
	hits   map[string]int        // requests per path, for Flap

	tokens   atomic.Int64 // completion tokens served, the progress counter
	requests atomic.Int64 // requests answered or begun
	closeErr error
	once     sync.Once
}

// Start listens on 127.0.0.1:0 and serves o.Behaviour until Close.
func Start(o Options) (*Server, error) {
	if o.Behaviour == "" {
		o.Behaviour = Healthy
	}
	if _, err := Parse(string(o.Behaviour)); err != nil {
		return nil, fmt.Errorf("start hostile server: %w", err)
	}
	switch {
	case o.Tick == 0:
		o.Tick = 20 * time.Millisecond
	case o.Tick < 0:
		o.Tick = 0
	}
	if o.HugeBytes <= 0 {
		o.HugeBytes = 1 << 30
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start hostile server: listen: %w", err)
	}
	s := &Server{o: o, ln: ln, done: make(chan struct{}), conns: map[net.Conn]struct{}{}, hits: map[string]int{}}
	s.wg.Add(1)
	if o.Behaviour == Silent && !o.HealthOK {
		go s.acceptSilently()
		return s, nil
	}
	s.srv = &http.Server{Handler: s, ConnState: s.connState, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed at Close
	}()
	return s, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// TargetArgs are the CLI flags that point run, soak and doctor at this
// server as an external target: it is the router, the one engine's
// /metrics and its /debug/rooms.
func (s *Server) TargetArgs() []string {
	return []string{"--target", "external", "--router", s.URL(), "--metrics", s.URL() + "/metrics", "--engine-url", s.URL()}
}

// URLOnlyArgs are TargetArgs without --engine-url: the target as SGLang
// is, with no /debug/rooms (the healthy control row uses them: the fake
// has no rooms to show, and rooms-terminal would be inconclusive).
func (s *Server) URLOnlyArgs() []string { return s.TargetArgs()[:6] }

// Name is the behaviour, with "+health-ok" when the health endpoints are
// spared.
func (s *Server) Name() string {
	if s.o.HealthOK {
		return string(s.o.Behaviour) + "+health-ok"
	}
	return string(s.o.Behaviour)
}

// Behaviour is what the server does.
func (s *Server) Behaviour() Behaviour { return s.o.Behaviour }

// Requests is how many requests (or, when Silent, connections) the server
// has seen: a test uses it to know the harness reached the target at all.
func (s *Server) Requests() int64 { return s.requests.Load() }

// OpenConns is the number of client connections open now; once a client
// process has exited it must fall to 0.
func (s *Server) OpenConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops listening, closes every connection and waits until no
// goroutine of the server is left.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.mu.Unlock()
		if s.srv != nil {
			if err := s.srv.Close(); err != nil {
				s.closeErr = fmt.Errorf("close hostile server: %w", err)
			}
		} else if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = fmt.Errorf("close hostile listener: %w", err)
		}
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
			delete(s.conns, c) // the HTTP server reports StateClosed later, or never for a hijacked one
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s.closeErr
}

// acceptSilently holds every connection open and never answers. It reads
// and discards what the client sends, only to notice when the client has
// gone (so OpenConns can tell a client that left nothing open).
func (s *Server) acceptSilently() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.requests.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			_, _ = io.Copy(io.Discard, c) // until the client closes, or Close
			s.forget(c)
		}()
	}
}

// connState tracks open connections. A hijacked connection stays tracked
// until the handler that took it closes it (forget).
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = struct{}{}
	case http.StateClosed:
		delete(s.conns, c)
	}
}

// forget closes a hijacked connection and stops tracking it.
func (s *Server) forget(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// enter registers a handler with the close wait group; false once closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// isDone reports whether Close has begun.
func (s *Server) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// hit counts a request of path and returns its number, from 1.
func (s *Server) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[path]++
	return s.hits[path]
}

// ServeHTTP answers r as the behaviour says.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		return
	}
	defer s.wg.Done()
	s.requests.Add(1)
	if s.o.HealthOK && pathKind(r.URL.Path) == "health" {
		s.good(w, r)
		return
	}
	switch s.o.Behaviour {
	case Silent:
		// Read the whole request (so the server watches the connection and
		// cancels r's context when the client leaves), and never answer.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		select {
		case <-s.done:
		case <-r.Context().Done(): // the client gave up
		}
	case Trickle:
		s.trickle(w, r)
	case Endless:
		s.stream(w, r, -1)
	case Huge:
		s.stream(w, r, s.o.HugeBytes)
	case Reset:
		s.reset(w, r)
	case Flap:
		if s.hit(r.URL.Path)%2 == 0 {
			http.Error(w, "hostile flap: unhealthy this time", http.StatusServiceUnavailable)
			return
		}
		s.good(w, r)
	default:
		s.good(w, r)
	}
}

// good writes the well-formed answer of r's path (with the behaviour's
// metrics).
func (s *Server) good(w http.ResponseWriter, r *http.Request) {
	a := s.answer(r)
	w.Header().Set("Content-Type", a.contentType)
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// trickle writes the good answer, status line and headers included, one
// byte per Tick, then closes the connection.
func (s *Server) trickle(w http.ResponseWriter, r *http.Request) {
	a := s.answer(r)
	c, ok := s.hijack(w)
	if !ok {
		return
	}
	defer s.forget(c)
	raw := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		a.status, http.StatusText(a.status), a.contentType, len(a.body)) + string(a.body)
	tick := time.NewTicker(max(s.o.Tick, time.Nanosecond)) // a ticker needs a period above 0
	defer tick.Stop()
	for i := 0; i < len(raw); i++ {
		if _, err := c.Write([]byte{raw[i]}); err != nil {
			return
		}
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

// reset sends 200 with a Content-Length far past what follows, a few
// bytes of the good body, and after one Tick (so the client has read the
// headers) resets the connection.
func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	a := s.answer(r)
	c, ok := s.hijack(w)
	if !ok {
		return
	}
	defer s.forget(c)
	part := a.body[:min(len(a.body), 16)]
	raw := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", a.contentType, len(a.body)+1<<20, part)
	if _, err := c.Write([]byte(raw)); err != nil {
		return
	}
	t := time.NewTimer(s.o.Tick)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
}

// hijack takes the connection from the HTTP server.
func (s *Server) hijack(w http.ResponseWriter) (net.Conn, bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "hostile: cannot hijack", http.StatusInternalServerError)
		return nil, false
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return nil, false
	}
	return c, true
}

// pathKind groups the endpoints by the body they answer with.
func pathKind(path string) string {
	switch {
	case path == contract.PathMetrics:
		return "metrics"
	case strings.HasPrefix(path, contract.PathDebugRooms):
		return "rooms"
	case strings.HasPrefix(path, contract.PathDebugProbes):
		return "probes"
	case path == contract.PathChatCompletions, path == contract.PathGenerate:
		return "sse"
	case path == contract.PathServerInfo, path == "/server_info":
		return "info"
	}
	return "health"
}
