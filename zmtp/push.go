package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Push is a PUSH socket connected to one PULL peer. It never reconnects on
// its own: once the connection breaks every Send fails and the caller
// redials, so a lost connection is visible (libzmq would silently drop the
// queued messages). Send is safe for concurrent use; each message is
// written whole.
type Push struct {
	conn net.Conn
	// sem serialises writers (Send and PONG replies) while letting a
	// waiting Send give up on its ctx.
	sem  chan struct{}
	done chan struct{}

	mu     sync.Mutex
	broken error
	dead   chan struct{} // closed when broken is set

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Dial connects to a PULL socket at addr ("host:port" or "tcp://host:port")
// and completes the handshake before returning.
func Dial(ctx context.Context, addr string) (*Push, error) {
	hp, err := hostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial zmtp push: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("dial zmtp push to %s: %w", hp, err)
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	if _, _, err := handshake(ctx, conn, br, TypePush); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("handshake with zmtp pull %s: %w", hp, err)
	}
	_ = conn.SetDeadline(time.Time{})
	p := &Push{conn: conn, sem: make(chan struct{}, 1), done: make(chan struct{}), dead: make(chan struct{})}
	p.wg.Add(1)
	go p.read(br)
	return p, nil
}

// LocalAddr is the local end of the connection (useful to tell peers apart).
func (p *Push) LocalAddr() string { return p.conn.LocalAddr().String() }

// Send writes one multipart message. It blocks while the peer is not
// reading (TCP backpressure) until ctx ends. An error means the connection
// is unusable (a cancelled Send may have written part of a message); every
// later Send fails too and the caller should Close and Dial again.
func (p *Push) Send(ctx context.Context, frames [][]byte) error {
	if len(frames) == 0 {
		return fmt.Errorf("zmtp push send: empty message")
	}
	select {
	case p.sem <- struct{}{}:
	case <-p.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("zmtp push send: %w", ctx.Err())
	}
	defer func() { <-p.sem }()
	if err := p.err(); err != nil {
		return err
	}
	bufs := make(net.Buffers, 0, 2*len(frames))
	for _, f := range MessageFrames(frames) {
		bufs = append(bufs, f.Header())
		if len(f.Body) > 0 {
			bufs = append(bufs, f.Body)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = p.conn.SetWriteDeadline(past) })
	_, err := bufs.WriteTo(p.conn)
	if !stop() {
		// ctx fired: clear the deadline for a write that did complete.
		_ = p.conn.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		p.fail(fmt.Errorf("zmtp push send: %w", err))
		return p.err()
	}
	return nil
}

// Close closes the connection and waits for the socket's reader goroutine.
// Messages already written to the kernel may still be delivered.
func (p *Push) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		p.fail(ErrClosed)
		err = p.conn.Close()
		p.wg.Wait()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close zmtp push: %w", err)
	}
	return nil
}

// Dead is closed once the connection is unusable (peer gone, failed or
// cancelled Send, Close), so an owner can redial without waiting for the
// next Send to fail.
func (p *Push) Dead() <-chan struct{} { return p.dead }

// Err says why the connection is unusable, or nil while it is healthy.
func (p *Push) Err() error { return p.err() }

func (p *Push) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	return p.broken
}

// fail records the first reason the connection became unusable.
func (p *Push) fail(err error) {
	p.mu.Lock()
	if p.broken == nil {
		p.broken = err
		close(p.dead)
	}
	p.mu.Unlock()
}

// read consumes what the PULL peer sends after the handshake: it answers
// PING with PONG and notices when the peer goes away, so Send fails fast
// instead of writing into a dead connection.
func (p *Push) read(br *bufio.Reader) {
	defer p.wg.Done()
	for {
		f, err := ReadFrame(br)
		if err != nil {
			p.fail(fmt.Errorf("zmtp push: connection to %s lost: %w", p.conn.RemoteAddr(), err))
			_ = p.conn.Close()
			return
		}
		if !f.IsCommand() {
			continue // a PULL peer has no messages to send; ignore
		}
		name, data, err := ParseCommand(f.Body)
		if err != nil || name != CmdPing {
			continue
		}
		pong, ok := pongFor(data)
		if !ok {
			continue
		}
		select {
		case p.sem <- struct{}{}:
		case <-p.done:
			return
		}
		err = WriteFrame(p.conn, pong)
		<-p.sem
		if err != nil {
			p.fail(fmt.Errorf("zmtp push: answer ping: %w", err))
		}
	}
}
