package zmtp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestGreetingRoundTripAndMalformed(t *testing.T) {
	t.Parallel()
	good := NewGreeting().Bytes()
	g, err := ParseGreeting(good)
	if err != nil || g != NewGreeting() {
		t.Fatalf("round trip: %+v %v", g, err)
	}
	v30 := bytes.Clone(good)
	v30[11] = 0
	if g, err := ParseGreeting(v30); err != nil || g.Minor != 0 {
		t.Fatalf("ZMTP 3.0 greeting rejected: %v", err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short", good[:11]},
		{"bad first byte", mod(func(b []byte) []byte { b[0] = 0; return b })},
		{"bad tenth byte", mod(func(b []byte) []byte { b[9] = 0; return b })},
		{"zmtp 2", mod(func(b []byte) []byte { b[10] = 1; return b })},
		{"empty mechanism", mod(func(b []byte) []byte { clear(b[12:32]); return b })},
		{"mechanism junk after nul", mod(func(b []byte) []byte { b[20] = 'x'; return b })},
		{"bad as-server", mod(func(b []byte) []byte { b[32] = 7; return b })},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 40)))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadGreeting(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatal("accepted")
			}
			if len(tc.in) >= GreetingSize && !errors.Is(err, ErrProtocol) {
				t.Fatalf("want ErrProtocol, got %v", err)
			}
		})
	}
}

func TestFrameEncoding(t *testing.T) {
	t.Parallel()
	cases := []struct {
		f    Frame
		want []byte
	}{
		{Frame{Body: []byte("ab")}, []byte{0, 2, 'a', 'b'}},
		{Frame{Flags: FlagMore, Body: nil}, []byte{1, 0}},
		{Frame{Flags: FlagCommand, Body: []byte{1, 'X'}}, []byte{4, 2, 1, 'X'}},
		{Frame{Flags: FlagLong, Body: []byte("z")}, []byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 'z'}},
	}
	for _, tc := range cases {
		got := AppendFrame(nil, tc.f)
		if !bytes.Equal(got, tc.want) {
			t.Fatalf("%+v: got % x want % x", tc.f, got, tc.want)
		}
		back, err := ReadFrame(bytes.NewReader(got))
		if err != nil || !bytes.Equal(AppendFrame(nil, back), got) {
			t.Fatalf("re-encode of % x differs: %v", got, err)
		}
	}
	long := AppendFrame(nil, Frame{Body: make([]byte, 256)})
	if long[0] != FlagLong || len(long) != 9+256 {
		t.Fatalf("256-byte body not long-encoded: % x", long[:9])
	}
}

func TestReadFrameMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       []byte
		protocol bool
	}{
		{"empty", nil, false},
		{"flags only", []byte{0}, false},
		{"reserved bits", []byte{0x80, 0}, true},
		{"truncated short body", []byte{0, 5, 'a'}, false},
		{"truncated long size", []byte{2, 0, 0}, false},
		{"huge long size", []byte{2, 0xFF, 0, 0, 0, 0, 0, 0, 0}, true},
		{"truncated long body", append([]byte{2, 0, 0, 0, 0, 0, 0x20, 0, 0}, make([]byte, 100)...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.protocol != errors.Is(err, ErrProtocol) {
				t.Fatalf("ErrProtocol=%v, err %v", tc.protocol, err)
			}
			if len(tc.in) > 0 && errors.Is(err, io.EOF) {
				t.Fatalf("truncation reported as clean EOF: %v", err)
			}
		})
	}
}

func TestCommandsMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range [][]byte{nil, {0}, {5, 'R'}, {200}} {
		if _, _, err := ParseCommand(body); !errors.Is(err, ErrProtocol) {
			t.Fatalf("ParseCommand(% x): %v", body, err)
		}
	}
	good := AppendProperty(nil, PropSocketType, []byte("PUSH"))
	for _, data := range [][]byte{{0}, {3, 'a'}, good[:len(good)-1], append(bytes.Clone(good[:12]), 0xFF, 0xFF, 0xFF, 0xFF)} {
		if _, err := ParseProperties(data); !errors.Is(err, ErrProtocol) {
			t.Fatalf("ParseProperties(% x): %v", data, err)
		}
	}
	props, err := ParseProperties(append(good, AppendProperty(nil, PropIdentity, nil)...))
	if err != nil || len(props) != 2 || string(props[0].Value) != "PUSH" {
		t.Fatalf("good properties: %+v %v", props, err)
	}
}

// rawPeer connects to addr and completes a handshake by hand as socketType.
func rawPeer(t *testing.T, addr, socketType string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if _, err := c.Write(NewGreeting().Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGreeting(br); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(c, ReadyFrame(socketType, []byte("id"))); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(br)
	if err != nil {
		t.Fatal(err)
	}
	if name, _, _ := ParseCommand(f.Body); name != CmdReady {
		t.Fatalf("got %q, want READY", name)
	}
	return c, br
}

func TestPullAnswersPingAndSurvivesJunk(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	// Junk peers: garbage greeting, wrong socket type, bad frame after READY.
	junk, err := net.Dial("tcp", pull.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = junk.Write([]byte("GET / HTTP/1.1\r\n\r\n" + string(make([]byte, 64))))
	defer junk.Close()
	wrong, wbr := rawPeer2(t, pull.Addr(), TypePull)
	_ = wrong
	if _, err := ReadFrame(wbr); err == nil {
		t.Fatal("pull kept a PULL peer")
	}
	bad, _ := rawPeer(t, pull.Addr(), TypePush)
	_, _ = bad.Write([]byte{0xF0, 1, 2})

	c, br := rawPeer(t, pull.Addr(), TypePush)
	ping := CommandFrame(CmdPing, []byte{0, 10, 'c', 't', 'x'})
	if err := WriteFrame(c, ping); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(br)
	if err != nil {
		t.Fatal(err)
	}
	if name, data, _ := ParseCommand(f.Body); name != CmdPong || string(data) != "ctx" {
		t.Fatalf("got %q %q, want PONG ctx", name, data)
	}
	for _, fr := range MessageFrames([][]byte{[]byte("a"), []byte("b")}) {
		if err := WriteFrame(c, fr); err != nil {
			t.Fatal(err)
		}
	}
	m, err := pull.Recv(ctx)
	if err != nil || len(m) != 2 || string(m[1]) != "b" {
		t.Fatalf("after junk peers: %q %v", m, err)
	}
	// Each junk peer was refused and counted: bad greeting, PULL peer,
	// reserved flag bits.
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := pull.Refused(); n != 3 {
			return fmt.Errorf("refused %d peers, want 3", n)
		}
		return nil
	})
}

// rawPeer2 is rawPeer for a peer type the socket must refuse: it returns
// after sending READY without expecting one back.
func rawPeer2(t *testing.T, addr, socketType string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	_, _ = c.Write(NewGreeting().Bytes())
	if _, err := ReadGreeting(br); err != nil {
		t.Fatal(err)
	}
	_ = WriteFrame(c, ReadyFrame(socketType, nil))
	if _, err := ReadFrame(br); err != nil { // the pull's READY
		t.Fatal(err)
	}
	return c, br
}

func TestDialRefusesBadPeers(t *testing.T) {
	ctx := testkit.Context(t)
	ln := testkit.Listen(t)
	replies := [][]byte{
		[]byte("HTTP/1.1 400 Bad Request\r\n\r\n" + string(make([]byte, 64))),
		append(NewGreeting().Bytes(), AppendFrame(nil, ReadyFrame(TypePush, nil))...),
		append(NewGreeting().Bytes(), AppendFrame(nil, CommandFrame(CmdError, []byte("\x04nope")))...),
		append(NewGreeting().Bytes(), AppendFrame(nil, Frame{Body: []byte("msg")})...),
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		for _, r := range replies {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(r)
			_, _ = io.CopyN(io.Discard, c, GreetingSize)
			_ = c.Close()
		}
	}()
	for i := range replies {
		if p, err := Dial(ctx, ln.Addr().String()); err == nil {
			_ = p.Close()
			t.Fatalf("reply %d: Dial succeeded", i)
		} else if !errors.Is(err, ErrProtocol) {
			t.Fatalf("reply %d: want ErrProtocol, got %v", i, err)
		}
	}
	<-served
}
