package protocol

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

	"github.com/pdchaos/pdchaos/zmtp"
)

// FrontOptions configure a Front. The zero value of each optional field is
// its documented default.
type FrontOptions struct {
	// Listen is the address to bind; empty means 127.0.0.1:0. A caller
	// that must keep an address across runs (decode caches it) passes the
	// one it had.
	Listen string
	// Upstream is the real peer (host:port or tcp://host:port); empty
	// refuses connections (they are cut and counted as Failed) until
	// SetUpstream names it.
	Upstream string
	// Rewrite, if set, may change each whole message before it goes on
	// (RewriteDecodeAddr). changed=false passes the message byte for byte;
	// an error counts it as Unrewritten and passes it untouched, so the
	// link keeps working and the count says what escaped the rewriting.
	Rewrite func(Message) (frames [][]byte, changed bool, err error)
}

// FrontStats counts what a Front relayed.
type FrontStats struct {
	Conns       int64 `json:"conns"`
	Messages    int64 `json:"messages"`
	Unknown     int64 `json:"unknown"`
	Rewritten   int64 `json:"rewritten"`
	Unrewritten int64 `json:"unrewritten"`
	// Spliced counts connections moved to a new upstream (Redirect) at a
	// message boundary, without the peer seeing a reconnect.
	Spliced int64 `json:"spliced"`
	// Failed counts connections cut because the upstream could not be
	// reached or re-handshaken; the peer reconnects.
	Failed int64 `json:"failed"`
}

// Front is pdchaos's fixed hop on a ZMTP link of a deployment it cannot
// re-route: the peer is pointed at it once (through /route or a rewritten
// address frame) and stays connected, while Redirect moves where it
// forwards. A live connection is spliced onto the new upstream between two
// messages: the Front replays the peer's greeting and READY to the new
// upstream and swallows the new upstream's own, so no message is lost or
// cut and the peer never reconnects (a libzmq PUSH would lose its queue on
// reconnect). Faults then sit behind it (a Proxy or Toxiproxy given by
// Redirect). It parses the PUSH→PULL direction only to find message
// boundaries (and to Rewrite); the reverse is copied raw.
type Front struct {
	opts   FrontOptions
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	via   string
	gen   uint64
	conns map[net.Conn]struct{}

	conns64, msgs, unknown, rewritten, unrewritten, spliced, failed atomic.Int64

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// ListenFront binds a Front; ctx bounds the bind only. Close stops it.
func ListenFront(ctx context.Context, opts FrontOptions) (*Front, error) {
	opts.Upstream = trimTCP(opts.Upstream)
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen front for %s on %s: %w", opts.Upstream, opts.Listen, err)
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &Front{opts: opts, ln: ln, ctx: fctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the Front's listening host:port.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// Upstream is the real peer's address (empty until known).
func (f *Front) Upstream() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opts.Upstream
}

// SetUpstream names the real peer, for a Front bound before its peer was
// known; live connections move to it at their next message boundary.
func (f *Front) SetUpstream(addr string) {
	f.mu.Lock()
	f.opts.Upstream = trimTCP(addr)
	f.gen++
	f.mu.Unlock()
}

// Redirect forwards from now on to via (a proxy in front of Upstream);
// empty goes straight to Upstream again. Live connections move at their
// next message boundary.
func (f *Front) Redirect(via string) {
	f.mu.Lock()
	f.via = trimTCP(via)
	f.gen++
	f.mu.Unlock()
}

// Stats returns the counters.
func (f *Front) Stats() FrontStats {
	return FrontStats{Conns: f.conns64.Load(), Messages: f.msgs.Load(), Unknown: f.unknown.Load(),
		Rewritten: f.rewritten.Load(), Unrewritten: f.unrewritten.Load(), Spliced: f.spliced.Load(), Failed: f.failed.Load()}
}

// Close stops listening, cuts every connection and waits for them.
func (f *Front) Close() error {
	var err error
	f.closeOnce.Do(func() {
		err = f.ln.Close()
		f.cancel()
		f.mu.Lock()
		for c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close front for %s: %w", f.opts.Upstream, err)
	}
	return nil
}

func (f *Front) target() (string, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.via != "" {
		return f.via, f.gen
	}
	return f.opts.Upstream, f.gen
}

func (f *Front) track(c net.Conn, on bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on && f.ctx.Err() != nil {
		return false
	}
	if on {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *Front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if f.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !f.track(c, true) {
			_ = c.Close()
			return
		}
		f.conns64.Add(1)
		f.wg.Add(1)
		go f.serve(c)
	}
}

// leg is one upstream connection and the goroutine copying its bytes back
// to the client.
type leg struct {
	up   net.Conn
	gen  uint64
	done chan struct{}
	// retired is set before the Front ends the leg itself (a splice or
	// the end of serve), so back does not cut the client for it.
	retired atomic.Bool
}

func (f *Front) dial(gen uint64, addr string) (*leg, error) {
	if addr == "" {
		return nil, errors.New("no upstream yet")
	}
	var d net.Dialer
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	up, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if !f.track(up, true) {
		_ = up.Close()
		return nil, net.ErrClosed
	}
	return &leg{up: up, gen: gen, done: make(chan struct{})}, nil
}

// back copies the leg's upstream to the client until either ends; when the
// upstream ends on its own the client is cut too (the peer reconnects, as
// it would to a dead upstream), unless a Redirect is pending: a fault proxy
// closing as its fault heals must not cut the peer, whose next message
// splices onto the new upstream. Owned by serve, which waits for it.
func (f *Front) back(client net.Conn, l *leg, r io.Reader) {
	defer close(l.done)
	_, _ = io.CopyBuffer(client, r, make([]byte, 32<<10))
	if _, gen := f.target(); !l.retired.Load() && gen == l.gen {
		_ = client.Close()
	}
}

// endLeg ends a leg on purpose and waits for its back copy.
func (f *Front) endLeg(l *leg) {
	l.retired.Store(true)
	_ = l.up.Close()
	<-l.done
	f.track(l.up, false)
}

// serve relays one client connection; see Front.
func (f *Front) serve(client net.Conn) {
	defer f.wg.Done()
	defer f.track(client, false)
	defer client.Close()
	addr, gen := f.target()
	l, err := f.dial(gen, addr)
	if err != nil {
		f.failed.Add(1)
		return
	}
	defer func() { f.endLeg(l) }()
	go f.back(client, l, l.up)
	br := bufio.NewReaderSize(client, 64<<10)
	// The greeting goes through as it arrives: libzmq sends it in parts
	// and waits for the peer's.
	hello := make([]byte, 0, zmtp.GreetingSize+64)
	buf := make([]byte, zmtp.GreetingSize)
	for len(hello) < zmtp.GreetingSize {
		n, err := br.Read(buf[:zmtp.GreetingSize-len(hello)])
		if n > 0 {
			if _, werr := l.up.Write(buf[:n]); werr != nil {
				return
			}
			hello = append(hello, buf[:n]...)
		}
		if err != nil {
			return
		}
	}
	if _, err := zmtp.ParseGreeting(hello); err != nil {
		_, _ = io.CopyBuffer(l.up, br, make([]byte, 32<<10)) // not ZMTP: a plain relay
		return
	}
	inMessage, handshaking := false, true
	var raw, cmds []byte // cmds: commands met inside the message (PING)
	var frames [][]byte
	for {
		fr, err := zmtp.ReadFrame(br)
		if err != nil {
			return
		}
		if fr.IsCommand() {
			switch {
			case handshaking:
				// READY: kept to replay on a splice, which waits for the
				// first message so the handshake is never sent twice.
				hello = zmtp.AppendFrame(hello, fr)
			case inMessage:
				raw = zmtp.AppendFrame(raw, fr)
				cmds = zmtp.AppendFrame(cmds, fr)
				continue
			default:
				if l, err = f.spliceIfMoved(client, l, hello); err != nil {
					return
				}
			}
			if _, err := l.up.Write(zmtp.AppendFrame(nil, fr)); err != nil {
				return
			}
			continue
		}
		handshaking, inMessage = false, true
		raw = zmtp.AppendFrame(raw, fr)
		frames = append(frames, fr.Body)
		if len(frames) > zmtp.MaxMessageFrames {
			return
		}
		if fr.More() {
			continue
		}
		out := f.message(raw, cmds, frames)
		raw, cmds, frames, inMessage = nil, nil, nil, false
		if l, err = f.spliceIfMoved(client, l, hello); err != nil {
			return
		}
		if _, err := l.up.Write(out); err != nil {
			return
		}
	}
}

// message classifies and rewrites one whole message and returns its bytes:
// raw as read, or the rewritten message followed by any commands that came
// inside it (a heartbeat PING must still reach the peer).
func (f *Front) message(raw, cmds []byte, frames [][]byte) []byte {
	f.msgs.Add(1)
	kind, room, hasRoom := Classify(frames)
	if kind == KindUnknown {
		f.unknown.Add(1)
	}
	if f.opts.Rewrite == nil {
		return raw
	}
	out, changed, err := f.opts.Rewrite(Message{Frames: frames, Kind: kind, Room: room, HasRoom: hasRoom})
	switch {
	case err != nil:
		f.unrewritten.Add(1)
		return raw
	case !changed:
		return raw
	}
	f.rewritten.Add(1)
	var b []byte
	for _, fr := range zmtp.MessageFrames(out) {
		b = zmtp.AppendFrame(b, fr)
	}
	return append(b, cmds...)
}

// spliceIfMoved moves the connection to the current target when Redirect
// changed it: a new upstream leg gets the client's greeting and handshake
// replayed, and its own greeting and READY are read and dropped (the
// client has had one).
func (f *Front) spliceIfMoved(client net.Conn, l *leg, hello []byte) (*leg, error) {
	addr, gen := f.target()
	if gen == l.gen {
		return l, nil
	}
	f.endLeg(l) // ours to end: the client stays
	nl, err := f.dial(gen, addr)
	if err != nil {
		f.failed.Add(1)
		return l, fmt.Errorf("splice to %s: %w", addr, err)
	}
	_ = nl.up.SetDeadline(time.Now().Add(zmtp.HandshakeTimeout))
	br := bufio.NewReader(nl.up)
	err = func() error {
		if _, err := nl.up.Write(hello); err != nil {
			return err
		}
		if _, err := zmtp.ReadGreeting(br); err != nil {
			return err
		}
		for {
			fr, err := zmtp.ReadFrame(br)
			if err != nil {
				return err
			}
			if fr.IsCommand() {
				return nil // the peer's READY
			}
		}
	}()
	_ = nl.up.SetDeadline(time.Time{})
	if err != nil {
		f.failed.Add(1)
		f.track(nl.up, false)
		_ = nl.up.Close()
		return l, fmt.Errorf("splice to %s: handshake: %w", addr, err)
	}
	f.spliced.Add(1)
	go f.back(client, nl, br)
	return nl, nil
}
