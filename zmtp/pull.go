package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Pull binds and fair-receives multipart messages from any number of PUSH
// peers. Each peer connection has one reader goroutine that hands over one
// message at a time, so a slow Recv stops reading and TCP pushes back on
// the senders; memory stays bounded. Messages from one connection arrive in
// order.
type Pull struct {
	ln   net.Listener
	msgs chan Message
	done chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool

	wg        sync.WaitGroup
	closeOnce sync.Once
	refused   atomic.Int64
	lastConn  atomic.Uint64
}

// Message is one received message and the peer connection it came on.
type Message struct {
	Frames [][]byte
	// Conn names the connection, from 1, unique for the socket's life:
	// messages with the same Conn came in order from one peer process
	// (a reconnecting peer gets a new one), which lets an owner tie a
	// message to what the peer said first on its connection.
	Conn uint64
}

// Listen binds a PULL socket on addr ("127.0.0.1:0" or "tcp://host:port")
// and starts accepting peers. ctx bounds only the bind; the socket lives
// until Close.
func Listen(ctx context.Context, addr string) (*Pull, error) {
	hp, err := hostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen zmtp pull: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("listen zmtp pull on %s: %w", hp, err)
	}
	p := &Pull{
		ln:    ln,
		msgs:  make(chan Message),
		done:  make(chan struct{}),
		conns: make(map[net.Conn]struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Refused counts peer connections dropped because of what the peer sent:
// a greeting or READY that is not ZMTP 3.x from a PUSH, a malformed or
// over-limit frame or message, or a message cut off mid-frame. An owner
// exports it, so a hostile or broken peer is seen, not only survived.
func (p *Pull) Refused() int64 { return p.refused.Load() }

// refuse counts err if the peer caused it.
func (p *Pull) refuse(err error) {
	if errors.Is(err, ErrProtocol) || errors.Is(err, io.ErrUnexpectedEOF) {
		p.refused.Add(1)
	}
}

// Addr is the bound host:port, for peers to Dial.
func (p *Pull) Addr() string { return p.ln.Addr().String() }

// Recv returns the next message (its frames). It returns ErrClosed after
// Close and ctx's error when ctx ends first.
func (p *Pull) Recv(ctx context.Context) ([][]byte, error) {
	m, err := p.RecvMessage(ctx)
	return m.Frames, err
}

// RecvMessage is Recv with the connection the message came on.
func (p *Pull) RecvMessage(ctx context.Context) (Message, error) {
	select {
	case <-p.done:
		return Message{}, ErrClosed
	default:
	}
	select {
	case m := <-p.msgs:
		return m, nil
	case <-p.done:
		return Message{}, ErrClosed
	case <-ctx.Done():
		return Message{}, fmt.Errorf("zmtp pull recv: %w", ctx.Err())
	}
}

// Close stops accepting, closes every peer connection and waits for all of
// the socket's goroutines. Messages not yet received are dropped, as libzmq
// drops them.
func (p *Pull) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	if err != nil {
		return fmt.Errorf("close zmtp pull: %w", err)
	}
	return nil
}

func (p *Pull) accept() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. out of file descriptors): back off, stay stoppable.
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-p.done:
				t.Stop()
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Pull) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Pull) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// serve runs one peer connection: handshake, then messages until the peer
// goes away or the socket closes. Errors end the connection only; the peer
// reconnects, as with libzmq.
func (p *Pull) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	// Close interrupts the handshake by closing c; the timeout covers silent peers.
	ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
	br := bufio.NewReaderSize(c, readBufSize)
	_, _, err := handshake(ctx, c, br, TypePull)
	cancel()
	if err != nil {
		p.refuse(err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	conn := p.lastConn.Add(1)
	onCmd := func(f Frame) error { return answerCommand(c, f) }
	for {
		msg, err := ReadMessage(br, onCmd)
		if err != nil {
			p.refuse(err)
			return
		}
		select {
		case p.msgs <- Message{Frames: msg, Conn: conn}:
		case <-p.done:
			return
		}
	}
}

// answerCommand handles a command after the handshake: PING gets a PONG,
// ERROR ends the connection, anything else is ignored.
func answerCommand(w net.Conn, f Frame) error {
	name, data, err := ParseCommand(f.Body)
	if err != nil {
		return err
	}
	switch name {
	case CmdPing:
		if pong, ok := pongFor(data); ok {
			return WriteFrame(w, pong)
		}
	case CmdError:
		return fmt.Errorf("%w: peer sent ERROR %q", ErrProtocol, errorReason(data))
	}
	return nil
}
