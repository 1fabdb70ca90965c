package hostilepeer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/pdchaos/pdchaos/zmtp"
)

// Sink takes ZMTP PUSH connections as a PULL socket does, counts the
// messages on them, and breaks them on demand with a reset: the far end of
// a connection that dies between two messages (a peer's process killed, a
// middlebox dropping its state). The sender's next message on it must fail
// and be counted, and the one after go out on a new connection.
type Sink struct {
	ln   net.Listener
	msgs atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewSink listens on a loopback port of its own.
func NewSink(ctx context.Context) (*Sink, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hostile sink: %w", err)
	}
	s := &Sink{ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is where the sink listens, host:port.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Messages is how many whole messages the sink has read.
func (s *Sink) Messages() int64 { return s.msgs.Load() }

// Reset ends every open connection with a TCP reset and returns how many.
func (s *Sink) Reset() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // Close sends RST, not FIN
		}
		_ = c.Close()
		delete(s.conns, c)
		n++
	}
	return n
}

// Close stops listening, resets what is open and waits for its readers.
func (s *Sink) Close() error {
	err := s.ln.Close()
	s.Reset()
	s.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close hostile sink: %w", err)
	}
	return nil
}

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.read(c)
	}
}

// read answers the handshake as a PULL socket and counts messages until
// the connection ends.
func (s *Sink) read(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	hello := append(zmtp.NewGreeting().Bytes(), zmtp.AppendFrame(nil, zmtp.ReadyFrame(zmtp.TypePull, nil))...)
	if _, err := c.Write(hello); err != nil {
		return
	}
	br := bufio.NewReader(c)
	if _, err := zmtp.ReadGreeting(br); err != nil {
		return
	}
	for {
		if _, err := zmtp.ReadMessage(br, func(zmtp.Frame) error { return nil }); err != nil {
			return
		}
		s.msgs.Add(1)
	}
}
