package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/zmtp/zmtptest"
)

// TestRewriteDecodeAddrLayouts rewrites decode's notify address in every
// layout that carries one (sglang-wire.md §3) and leaves everything else
// alone; what it cannot place is an error, never a guess.
func TestRewriteDecodeAddrLayouts(t *testing.T) {
	t.Parallel()
	nixlReg := msg(GuardFrame, NoneFrame, "10.0.0.2", "17000", "agent", "meta", "", "", "", "0", "1", "0", "16", "", "", "", "", "1024", "VRAM", "")
	mcReg := msg(NoneFrame, "10.0.0.2", "17000", "10.0.0.2:18000", "p", "a", "", "0", "1", "16", "", "", "l", "", "", "0", "1", "0", "")
	for _, tc := range []struct {
		name           string
		frames         [][]byte
		ipAt, portAt   int
		carries, fails bool
	}{
		{"nixl registration", nixlReg, 2, 3, true, false},
		{"nixl transferinfo", msg(GuardFrame, "42", "10.0.0.2", "17000", "agent", "\x01\x00\x00\x00", "0", "1", "", "0"), 2, 3, true, false},
		{"mooncake registration", mcReg, 1, 2, true, false},
		{"mooncake registration, old 10 frames", mcReg[:10], 1, 2, true, false},
		{"mooncake transferinfo", msg("42", "10.0.0.2", "17000", "10.0.0.2:18000", "\x01\x00\x00\x00", "0", "", "1", "0", ""), 1, 2, true, false},
		{"abort", msg(AbortFrame, "42", "10.0.0.2", "17000"), 2, 3, true, false},
		{"abort with extra frames", msg(AbortFrame, "42", "10.0.0.2", "17000", "gen", "7"), 2, 3, true, false},
		{"abort ack", msg(AbortAckFrame, "42", "0"), 0, 0, false, false},
		{"mooncake status", msg("42", "0", "0"), 0, 0, false, false},
		{"nixl kv_status", msg(KVStatusFrame, "42", "0", "0", "why"), 0, 0, false, false},
		{"unknown layout", msg("HELLO", "10.0.0.2", "17000"), 0, 0, false, true},
		{"transferinfo with a bad port", msg(GuardFrame, "42", "10.0.0.2", "port", "agent", "", "0", "1", "", "0"), 0, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kind, room, hasRoom := Classify(tc.frames)
			m := Message{Frames: tc.frames, Kind: kind, Room: room, HasRoom: hasRoom}
			var asked string
			out, changed, err := RewriteDecodeAddr(m, func(from string) (string, error) {
				asked = from
				return "127.0.0.1:9", nil
			})
			switch {
			case tc.fails:
				if !errors.Is(err, ErrNotRewritable) || changed {
					t.Fatalf("kind %s: err %v, changed %v; want ErrNotRewritable", kind, err, changed)
				}
				return
			case err != nil:
				t.Fatalf("kind %s: %v", kind, err)
			case changed != tc.carries:
				t.Fatalf("kind %s: changed %v, want %v", kind, changed, tc.carries)
			case !tc.carries:
				return
			}
			if asked != "10.0.0.2:17000" {
				t.Errorf("asked for %q, want the decode address 10.0.0.2:17000", asked)
			}
			for i := range tc.frames {
				want := string(tc.frames[i])
				switch i {
				case tc.ipAt:
					want = "127.0.0.1"
				case tc.portAt:
					want = "9"
				}
				if string(out[i]) != want {
					t.Errorf("frame %d = %q, want %q", i, out[i], want)
				}
			}
			if string(tc.frames[tc.portAt]) != "17000" {
				t.Error("the input message was changed in place")
			}
			if k2, r2, _ := Classify(out); k2 != kind || r2 != room {
				t.Errorf("rewritten message classifies as %s room %d, want %s room %d", k2, r2, kind, room)
			}
		})
	}
}

func listenFront(t *testing.T, opts FrontOptions) *Front {
	t.Helper()
	f, err := ListenFront(testkit.Context(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// TestFrontSplicesWithoutLoss moves one live PUSH connection to another
// upstream and back between messages: every message arrives once, in
// order, at the upstream current when it was sent, and the peer never
// sees its connection end.
func TestFrontSplicesWithoutLoss(t *testing.T) {
	a, _ := pair(t)
	b, _ := pair(t)
	f := listenFront(t, FrontOptions{Upstream: a.Addr()})
	push := dialT(t, f.Addr())
	n := 0
	round := func(to string) {
		t.Helper()
		var want []string
		for range 20 {
			m := abort(strconv.Itoa(n))
			want = append(want, first(m))
			send(t, push, m)
			n++
		}
		pull := a
		if to == "b" {
			pull = b
		}
		var got []string
		for _, m := range recvN(t, pull, len(want)) {
			got = append(got, first(m))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("upstream %s got %v, want %v", to, got, want)
		}
	}
	round("a")
	f.Redirect(b.Addr())
	round("b")
	f.Redirect("")
	round("a")
	select {
	case <-push.Dead():
		t.Fatalf("the peer's connection ended: %v", push.Err())
	default:
	}
	s := f.Stats()
	if s.Conns != 1 || s.Spliced != 2 || s.Messages != 60 || s.Failed != 0 {
		t.Fatalf("stats %+v, want 1 connection, 2 splices, 60 messages", s)
	}
}

// TestFrontRewritesAndCounts: a known layout is rewritten on the way; one
// it cannot place goes through untouched and is counted, not guessed at.
func TestFrontRewritesAndCounts(t *testing.T) {
	pull, _ := pair(t)
	to := func(from string) (string, error) { return "127.0.0.1:9", nil }
	f := listenFront(t, FrontOptions{Upstream: pull.Addr(), Rewrite: func(m Message) ([][]byte, bool, error) {
		return RewriteDecodeAddr(m, to)
	}})
	push := dialT(t, f.Addr())
	odd := msg("HELLO", "10.0.0.2", "17000")
	send(t, push, metadata("5"), odd, msg(AbortAckFrame, "5"))
	got := recvN(t, pull, 3)
	if ip, port := string(got[0][2]), string(got[0][3]); ip != "127.0.0.1" || port != "9" {
		t.Errorf("metadata went on with %s:%s, want 127.0.0.1:9", ip, port)
	}
	if fmt.Sprint(got[1]) != fmt.Sprint(odd) || first(got[2]) != AbortAckFrame+"/5" {
		t.Errorf("untouched messages changed: %q %q", got[1], got[2])
	}
	s := f.Stats()
	if s.Rewritten != 1 || s.Unrewritten != 1 || s.Unknown != 1 || s.Messages != 3 {
		t.Fatalf("stats %+v, want 1 rewritten, 1 unrewritten (the unknown layout), 3 messages", s)
	}
}

// TestFrontWithoutUpstreamRefuses: a notify slot bound before its decode
// is known cuts connections and counts them, then relays once told.
func TestFrontWithoutUpstreamRefuses(t *testing.T) {
	f := listenFront(t, FrontOptions{})
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from an unbound front succeeded")
	}
	c.Close()
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := f.Stats().Failed; n != 1 {
			return fmt.Errorf("%d refused connections counted, want 1", n)
		}
		return nil
	})
	pull, _ := pair(t)
	f.SetUpstream(pull.Addr())
	send(t, dialT(t, f.Addr()), abort("1"))
	if m := recvN(t, pull, 1); first(m[0]) != AbortFrame+"/1" {
		t.Fatalf("got %q", m[0])
	}
}

// TestFrontSplicesOntoPyzmq moves a live connection onto a libzmq PULL:
// the replayed greeting and READY satisfy libzmq, and its own handshake is
// swallowed, so the peer's later messages arrive there whole.
func TestFrontSplicesOntoPyzmq(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	ctx := testkit.Context(t)
	a, _ := pair(t)
	want := [][][]byte{metadata("1"), abort("1"), {bytes.Repeat([]byte("x"), 100000)}}
	py, err := zmtptest.StartPyPull(ctx, len(want))
	if err != nil {
		t.Fatal(err)
	}
	f := listenFront(t, FrontOptions{Upstream: a.Addr()})
	push := dialT(t, f.Addr())
	send(t, push, abort("0"))
	recvN(t, a, 1)
	f.Redirect(py.Addr)
	send(t, push, want...)
	got, err := py.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || first(got[1]) != AbortFrame+"/1" || !bytes.Equal(got[2][0], want[2][0]) {
		t.Fatalf("pyzmq got %d messages: %q", len(got), got)
	}
	if s := f.Stats(); s.Spliced != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v, want one splice", s)
	}
}
