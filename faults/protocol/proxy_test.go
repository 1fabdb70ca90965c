package protocol

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/zmtp"
	"github.com/pdchaos/pdchaos/zmtp/zmtptest"
)

func listenProxy(t *testing.T, upstream string, rules ...Rule) *Proxy {
	t.Helper()
	p, err := Listen(testkit.Context(t), upstream, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestTransparentByteForByte relays a large random frame stream (short and
// long frames, a long-encoded small frame, commands between messages) and
// compares what upstream got with what was sent, byte for byte.
func TestTransparentByteForByte(t *testing.T) {
	ln := testkit.Listen(t)
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		_, _ = c.Write(append(zmtp.NewGreeting().Bytes(), zmtp.AppendFrame(nil, zmtp.ReadyFrame(zmtp.TypePull, nil))...))
		b, _ := io.ReadAll(c)
		got <- b
	}()
	p := listenProxy(t, ln.Addr().String())

	r := rand.New(rand.NewPCG(3, 4))
	sent := append(zmtp.NewGreeting().Bytes(), zmtp.AppendFrame(nil, zmtp.ReadyFrame(zmtp.TypePush, []byte("me")))...)
	for i := range 400 {
		nf := 1 + r.IntN(5)
		for j := range nf {
			body := make([]byte, []int{0, 1, 255, 256, 4000, 70000}[r.IntN(6)])
			for k := range body {
				body[k] = byte(r.Uint32())
			}
			f := zmtp.Frame{Body: body}
			if j < nf-1 {
				f.Flags |= zmtp.FlagMore
			}
			if len(body) < 10 && r.IntN(3) == 0 {
				f.Flags |= zmtp.FlagLong // legal but unusual: must survive re-encoding
			}
			sent = zmtp.AppendFrame(sent, f)
		}
		if i%50 == 0 {
			sent = zmtp.AppendFrame(sent, zmtp.CommandFrame(zmtp.CmdPing, []byte{0, 1}))
		}
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.Copy(io.Discard, c) }()
	if _, err := c.Write(sent); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	select {
	case b := <-got:
		if !bytes.Equal(b, sent) {
			t.Fatalf("upstream got %d bytes, sent %d; streams differ", len(b), len(sent))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("upstream never saw the end of the stream")
	}
	if s := p.Stats(); s.Seen[KindUnknown] != 400 {
		t.Fatalf("proxy parsed %d messages, want 400", s.Seen[KindUnknown])
	}
}

func TestTransparentMessages(t *testing.T) {
	pull, _ := pair(t)
	p := listenProxy(t, "tcp://"+pull.Addr())
	push := dialT(t, p.Addr())
	var want [][][]byte
	for i := range 300 {
		want = append(want, metadata(fmt.Sprint(i)), abort(fmt.Sprint(i)), [][]byte{bytes.Repeat([]byte{byte(i)}, 1<<(i%21))})
	}
	go func() {
		for _, m := range want {
			if push.Send(context.Background(), m) != nil {
				return
			}
		}
	}()
	got := recvN(t, pull, len(want))
	for i := range want {
		if !bytes.Equal(bytes.Join(got[i], []byte{0}), bytes.Join(want[i], []byte{0})) || len(got[i]) != len(want[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
}

func TestProxyWithPyzmq(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	ctx := testkit.Context(t)
	want := [][][]byte{metadata("1"), abort("1"), msg(GuardFrame, "None", "ip", "1", "agent"), {bytes.Repeat([]byte("x"), 100000)}}

	t.Run("pyzmq push to our pull", func(t *testing.T) {
		pull, _ := pair(t)
		p := listenProxy(t, pull.Addr(), Rule{Kinds: []Kind{KindMetadata}, Action: ActHold, ReleaseOnAbort: true})
		errc := make(chan error, 1)
		go func() { errc <- zmtptest.PyPush(ctx, p.Addr(), want) }()
		got := recvN(t, pull, len(want))
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if first(got[0]) != "ABORT/1" || first(got[1]) != GuardFrame+"/1" {
			t.Fatalf("ABORT not delivered before its metadata: %s, %s", first(got[0]), first(got[1]))
		}
	})
	t.Run("our push to pyzmq pull", func(t *testing.T) {
		py, err := zmtptest.StartPyPull(ctx, len(want))
		if err != nil {
			t.Fatal(err)
		}
		p := listenProxy(t, py.Addr)
		push, err := zmtp.Dial(ctx, p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer push.Close()
		send(t, push, want...)
		got, err := py.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || !bytes.Equal(got[3][0], want[3][0]) {
			t.Fatalf("pyzmq got %d messages", len(got))
		}
	})
}

func TestNonZMTPPeerIsRelayedRaw(t *testing.T) {
	ln := testkit.Listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // echo
	}()
	p := listenProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line := bytes.Repeat([]byte("GET / HTTP/1.1 "), 10)
	line = append(line, '\n')
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	back, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil || !bytes.Equal(back, line) {
		t.Fatalf("echo through proxy: %q %v", back, err)
	}
}

// libzmq on both ends: a pyzmq PUSH sends each dialect's reference frames
// through the proxy to a pyzmq PULL. Every message arrives byte-for-byte
// and in order, and the proxy classified each as its layout says.
func TestProxyClassifiesDialectsFromPyzmq(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	type sent struct {
		frames [][]byte
		kind   Kind
	}
	dialects := map[string][]sent{
		"nixl": {
			{nixlRegistration(), KindRegistration},
			{nixlTransferInfo("11"), KindMetadata},
			{msg(AbortFrame, "11", "10.1.2.3", "41235"), KindAbort},
			{msg(AbortFrame, "12", "10.1.2.3", "41235", "7"), KindAbort},
			{msg(KVStatusFrame, "11", "0", "0", "Aborted by AbortReq"), KindStatus},
			{msg(AbortAckFrame, "11", "0"), KindAck},
		},
		"mooncake": {
			{mooncakeRegistration(), KindRegistration},
			{mooncakeRegistration()[:10], KindRegistration},
			{mooncakeTransferInfo("21"), KindMetadata},
			{mooncakeTransferInfo("22")[:8], KindMetadata},
			{msg(AbortFrame, "21", "10.1.2.3", "41235"), KindAbort},
			{msg("21", "0", "0"), KindStatus},
			{msg("22", "0", "1", "Failed to send kv chunk"), KindStatus},
			{msg(AbortAckFrame, "21"), KindAck},
			{msg(AbortAckFrame, "21", "1"), KindAck},
			{msg(AuxDataFrame, "21", "0", "5", "\x00\x00\x00\x04", "data"), KindAux},
			{msg("WATERMARK", "2", "8192", "10.1.2.3:17001"), KindStaging},
		},
	}
	for name, msgs := range dialects {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			msgs := append(msgs, sent{msg("junk", "x"), KindUnknown})
			want := map[Kind]int64{}
			var frames [][][]byte
			for _, m := range msgs {
				frames = append(frames, m.frames)
				want[m.kind]++
			}
			py, err := zmtptest.StartPyPull(ctx, len(frames))
			if err != nil {
				t.Fatal(err)
			}
			p := listenProxy(t, py.Addr)
			if err := zmtptest.PyPush(ctx, p.Addr(), frames); err != nil {
				t.Fatal(err)
			}
			got, err := py.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(frames) {
				t.Fatalf("pyzmq pull got %d messages, want %d", len(got), len(frames))
			}
			for i := range frames {
				if len(got[i]) != len(frames[i]) {
					t.Fatalf("message %d: %d frames, sent %d", i, len(got[i]), len(frames[i]))
				}
				for j := range frames[i] {
					if !bytes.Equal(got[i][j], frames[i][j]) {
						t.Fatalf("message %d frame %d differs", i, j)
					}
				}
			}
			s := p.Stats()
			for _, k := range Kinds {
				if s.Seen[k] != want[k] {
					t.Errorf("seen %s = %d, want %d (all: %v)", k, s.Seen[k], want[k], s.Seen)
				}
			}
		})
	}
}
