package zmtp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

// allocSlack absorbs the allocations of the runtime and the fuzzing engine
// that AllocatedBy cannot tell from the parser's own.
const allocSlack = 256 << 10

// wire encodes frames as a peer would send them.
func wire(frames ...Frame) []byte {
	var b []byte
	for _, f := range frames {
		b = AppendFrame(b, f)
	}
	return b
}

// The control messages of sglang-wire.md as ZMTP streams: a NIXL
// TransferInfo, a Mooncake status, an ABORT, with a READY and a PING around.
func seedStreams() [][]byte {
	msg := func(parts ...string) []Frame {
		var bs [][]byte
		for _, p := range parts {
			bs = append(bs, []byte(p))
		}
		return MessageFrames(bs)
	}
	return [][]byte{
		{0, 2, 'a', 'b'},
		{2, 0, 0, 0, 0, 0, 0, 0, 1, 'z'},
		{4, 6, 5, 'R', 'E', 'A', 'D', 'Y'},
		{0xFF, 0xFF},
		wire(ReadyFrame(TypePush, []byte("id"))),
		wire(msg("NixlMsgGuard", "42", "10.1.2.3", "41235", "decode_agent_7f3a", "\x04\x00\x00\x00", "17", "1", "", "0")...),
		wire(append([]Frame{CommandFrame(CmdPing, []byte{0, 10, 'c'})}, msg("12", "4", "0")...)...),
		wire(msg("ABORT", "42", "10.1.2.3", "41235")...),
		// A long frame announcing 2^60 bytes, and MORE frames that never end.
		{FlagLong, 0x10, 0, 0, 0, 0, 0, 0, 0},
		bytes.Repeat([]byte{FlagMore, 0}, 64),
	}
}

// FuzzReadFrame: no panic; a frame read re-encodes to exactly the bytes it
// came from (a proxy relays frames byte for byte); memory stays within the
// eager allocation plus what the input holds, so a header announcing 2^60
// bytes is refused before anything is allocated.
func FuzzReadFrame(f *testing.F) {
	for _, s := range seedStreams() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var frames []Frame
		var consumed int
		alloc := testkit.AllocatedBy(func() {
			r := bytes.NewReader(in)
			for {
				fr, err := ReadFrame(r)
				if err != nil {
					return
				}
				frames = append(frames, fr)
				consumed = len(in) - r.Len()
			}
		})
		if limit := uint64(eagerBody + 4*len(in) + allocSlack); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d, limit %d", len(in), alloc, limit)
		}
		if got := wire(frames...); !bytes.Equal(got, in[:consumed]) {
			t.Fatalf("re-encoded frames differ from their input:\n got % x\nwant % x", got, in[:consumed])
		}
		for _, fr := range frames {
			if fr.IsCommand() {
				if _, data, err := ParseCommand(fr.Body); err == nil {
					_, _ = ParseProperties(data)
				}
			}
		}
	})
}

// FuzzReadMessage: no panic; every message read is within MaxMessageFrames,
// and re-encoding the messages read (MORE on all but the last frame) reads
// back the same messages.
func FuzzReadMessage(f *testing.F) {
	for _, s := range seedStreams() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var msgs [][][]byte
		alloc := testkit.AllocatedBy(func() {
			r := bytes.NewReader(in)
			for {
				m, err := ReadMessage(r, nil)
				if err != nil {
					return
				}
				msgs = append(msgs, m)
			}
		})
		if limit := uint64(eagerBody + 8*len(in) + allocSlack); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d, limit %d", len(in), alloc, limit)
		}
		var again []byte
		for _, m := range msgs {
			if len(m) == 0 || len(m) > MaxMessageFrames {
				t.Fatalf("message of %d frames", len(m))
			}
			again = wire(MessageFrames(m)...)
			back, err := ReadMessage(bytes.NewReader(again), nil)
			if err != nil || !slices.EqualFunc(back, m, bytes.Equal) {
				t.Fatalf("message %q re-read as %q (%v)", m, back, err)
			}
		}
	})
}

// A peer sending empty MORE frames forever is cut off at MaxMessageFrames,
// and one announcing more than the message budget is refused unread.
//
// Not parallel: AllocatedBy counts every goroutine's allocations.
func TestReadMessageBounded(t *testing.T) {
	endless := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte{FlagMore, 0}, MaxMessageFrames+1)), bytes.NewReader([]byte{0, 0}))
	if _, err := ReadMessage(endless, nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("endless MORE frames: %v, want ErrProtocol", err)
	}
	var huge []byte
	huge = AppendFrame(huge, Frame{Flags: FlagMore, Body: []byte("x")})
	huge = append(huge, FlagLong, 0x40, 0, 0, 0, 0, 0, 0, 0) // 2^62 bytes
	alloc := testkit.AllocatedBy(func() {
		if _, err := ReadMessage(bytes.NewReader(huge), nil); !errors.Is(err, ErrProtocol) {
			t.Errorf("2^62-byte frame: %v, want ErrProtocol", err)
		}
	})
	if alloc > allocSlack {
		t.Fatalf("refusing a 2^62-byte frame allocated %d bytes", alloc)
	}
}

// FuzzGreeting: no panic; a greeting that parses encodes back to one that
// parses to the same value.
func FuzzGreeting(f *testing.F) {
	f.Add(NewGreeting().Bytes())
	v30 := NewGreeting().Bytes()
	v30[11] = 0
	f.Add(v30)
	curve := Greeting{Major: 3, Minor: 1, Mechanism: "CURVE", AsServer: true}.Bytes()
	f.Add(curve)
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 37))))
	f.Fuzz(func(t *testing.T, in []byte) {
		g, err := ParseGreeting(in)
		if err != nil {
			if len(in) == GreetingSize && !errors.Is(err, ErrProtocol) {
				t.Fatalf("bad greeting not ErrProtocol: %v", err)
			}
			return
		}
		back, err := ParseGreeting(g.Bytes())
		if err != nil || back != g {
			t.Fatalf("greeting %+v re-parsed as %+v (%v)", g, back, err)
		}
	})
}

// scriptConn is a net.Conn whose peer's bytes are a fuzz input and whose
// writes go nowhere: the handshake runs against them without a socket.
type scriptConn struct {
	r *bytes.Reader
}

func (c scriptConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (scriptConn) Write(b []byte) (int, error)      { return len(b), nil }
func (scriptConn) Close() error                     { return nil }
func (scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (scriptConn) SetDeadline(time.Time) error      { return nil }
func (scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (scriptConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzHandshake runs both socket types' handshakes against a peer whose
// every byte is fuzzed: no panic; it ends (the input runs out); a handshake
// that succeeds saw a READY from the one socket type it may talk to.
func FuzzHandshake(f *testing.F) {
	good := append(NewGreeting().Bytes(), wire(ReadyFrame(TypePush, []byte("id")))...)
	f.Add(good, false)
	f.Add(append(NewGreeting().Bytes(), wire(CommandFrame(CmdPing, []byte{0, 1}), ReadyFrame(TypePull, nil))...), true)
	f.Add(append(NewGreeting().Bytes(), wire(CommandFrame(CmdError, []byte("\x04nope")))...), false)
	f.Add(append(NewGreeting().Bytes(), wire(Frame{Body: []byte("msg")})...), false)
	f.Add(good[:40], false)
	f.Fuzz(func(t *testing.T, in []byte, asPush bool) {
		self := TypePull
		if asPush {
			self = TypePush
		}
		conn := scriptConn{r: bytes.NewReader(in)}
		_, props, err := doHandshake(conn, bufio.NewReader(conn), self)
		if err != nil {
			return
		}
		if checkPeerType(self, props) != nil {
			t.Fatalf("handshake as %s accepted properties %+v", self, props)
		}
	})
}
