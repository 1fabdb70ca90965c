package kvlink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// frame encodes one KV message as the engine writes it.
func frame(kind byte, room uint64, id uint32, last bool, payload []byte) []byte {
	var b bytes.Buffer
	h := make([]byte, contract.KVHeaderLen)
	h[0] = kind
	binary.BigEndian.PutUint64(h[1:], room)
	binary.BigEndian.PutUint32(h[9:], id)
	if last {
		h[13] = 1
	}
	binary.BigEndian.PutUint32(h[20:], 1) // one page
	b.Write(h)
	b.Write([]byte{0, 0, 0, 3})
	_ = binary.Write(&b, binary.BigEndian, uint32(len(payload)))
	b.Write(payload)
	b.Write([]byte{0, 5})
	b.WriteString("agent")
	return b.Bytes()
}

// sink is a KV listener like decode's: it reads whole frames, records them
// in arrival order and answers each with accepted.
type sink struct {
	ln  net.Listener
	mu  sync.Mutex
	got []contract.KVHeader
	bad int
	wg  sync.WaitGroup
}

func newSink(t *testing.T) *sink {
	s := &sink{ln: testkit.Listen(t)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(func() { _ = s.ln.Close(); s.wg.Wait() })
	return s
}

func (s *sink) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		_, h, err := contract.ReadKVFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.mu.Lock()
				s.bad++
				s.mu.Unlock()
			}
			return
		}
		s.mu.Lock()
		s.got = append(s.got, h)
		s.mu.Unlock()
		if _, err := c.Write([]byte{contract.KVReplyAccepted}); err != nil {
			return
		}
	}
}

func (s *sink) rooms() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for _, h := range s.got {
		out = append(out, h.Room)
	}
	return out
}

func (s *sink) malformed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bad
}

func startRelay(t *testing.T, up string, rules Rules) *Relay {
	t.Helper()
	r, err := Listen(testkit.Context(t), up, rules, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// send writes one frame and returns a channel with its reply (or error).
func send(t *testing.T, c net.Conn, f []byte) <-chan error {
	return sendThen(t, c, f, false)
}

// sendThen is send, closing the write side after the frame when cut is
// set: a stream cut short ends with its connection.
func sendThen(t *testing.T, c net.Conn, f []byte, cut bool) <-chan error {
	ch, _ := testkit.Async(t, func(context.Context) error {
		if _, err := c.Write(f); err != nil {
			return err
		}
		if cut {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return err
		}
		if b[0] != contract.KVReplyAccepted {
			return errors.New("chunk refused")
		}
		return nil
	})
	return ch
}

func waitStats(t *testing.T, r *Relay, cond func(Stats) bool) Stats {
	t.Helper()
	var s Stats
	testkit.Eventually(t, 5*time.Second, func() error {
		if s = r.Stats(); !cond(s) {
			return errors.New("stats not reached yet")
		}
		return nil
	})
	return s
}

// A held chunk is overtaken by a chunk on another connection, which decode
// applies first; only then does the held one go, and that counts once, as
// a reorder within its room only when the other chunk is of the same room
// (two posted writes of one room).
func TestRelayReordersAcrossConnections(t *testing.T) {
	for _, tc := range []struct {
		name       string
		other      uint64
		wantInRoom int64
	}{{"across rooms", 2, 0}, {"within a room", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink(t)
			r := startRelay(t, s.ln.Addr().String(), Rules{ReorderPct: 100, AfterChunks: 1, MaxHold: time.Minute})
			a, b := dial(t, r.Addr()), dial(t, r.Addr())
			doneA := send(t, a, frame(contract.KVKindChunk, 1, 0, false, []byte("aaaa")))
			waitStats(t, r, func(s Stats) bool { return s.Held == 1 })
			if err := r.SetRules(Rules{}); err != nil { // later chunks pass
				t.Fatal(err)
			}
			if err := testkit.Recv(t, send(t, b, frame(contract.KVKindChunk, tc.other, 1, false, []byte("bbbb"))), 5*time.Second); err != nil {
				t.Fatalf("the overtaking chunk: %v", err)
			}
			if err := testkit.Recv(t, doneA, 5*time.Second); err != nil {
				t.Fatalf("the held chunk: %v", err)
			}
			if got := s.rooms(); len(got) != 2 || got[0] != tc.other || got[1] != 1 {
				t.Fatalf("decode applied rooms %v, want [%d 1]", got, tc.other)
			}
			st := r.Stats()
			if st.Reordered != 1 || st.ReorderedInRoom != tc.wantInRoom || st.TimedOut != 0 || st.Chunks != 2 {
				t.Fatalf("stats %+v: want 1 reordered (%d in room), 0 timed out, 2 chunks", st, tc.wantInRoom)
			}
		})
	}
}

// A hold nothing overtook ends by MaxHold and is not a reorder.
func TestRelayHoldTimeoutIsNotAReorder(t *testing.T) {
	s := newSink(t)
	r := startRelay(t, s.ln.Addr().String(), Rules{ReorderPct: 100, MaxHold: 20 * time.Millisecond})
	c := dial(t, r.Addr())
	for id := range uint32(3) {
		if err := testkit.Recv(t, send(t, c, frame(contract.KVKindChunk, 7, id, id == 2, []byte("kk"))), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if st.Reordered != 0 || st.TimedOut != 3 || st.Held != 3 {
		t.Fatalf("stats %+v: want 3 held, 3 timed out, 0 reordered (one connection cannot overtake itself)", st)
	}
	if got := s.rooms(); len(got) != 3 {
		t.Fatalf("decode got %v", got)
	}
}

// A dropped chunk never reaches decode and its write completion fails.
func TestRelayDropFailsTheWrite(t *testing.T) {
	s := newSink(t)
	r := startRelay(t, s.ln.Addr().String(), Rules{DropPct: 100})
	c := dial(t, r.Addr())
	if err := testkit.Recv(t, send(t, c, frame(contract.KVKindChunk, 3, 0, false, []byte("x"))), 5*time.Second); err == nil {
		t.Fatal("the write of a dropped chunk completed")
	}
	if st := r.Stats(); st.Dropped != 1 || len(s.rooms()) != 0 {
		t.Fatalf("stats %+v, decode got %v: want 1 dropped, nothing delivered", st, s.rooms())
	}
}

// Delays are drawn in range and counted; aux messages pass untouched.
func TestRelayDelaysChunksNotAux(t *testing.T) {
	s := newSink(t)
	r := startRelay(t, s.ln.Addr().String(), Rules{DelayPct: 100, MinDelay: 5 * time.Millisecond, MaxDelay: 10 * time.Millisecond})
	c := dial(t, r.Addr())
	for _, f := range [][]byte{frame(contract.KVKindChunk, 4, 0, true, []byte("z")), frame(contract.KVKindAux, 4, 0, false, nil)} {
		if err := testkit.Recv(t, send(t, c, f), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if st.Delayed != 1 || st.Aux != 1 || st.DelayMs < 5 {
		t.Fatalf("stats %+v: want 1 chunk delayed >= 5ms, 1 aux", st)
	}
}

// A stream that breaks the format is counted, passed on as far as it came
// (decode sees the same bad frame) and closed; the relay carries on.
func TestRelayMalformedStream(t *testing.T) {
	s := newSink(t)
	r := startRelay(t, s.ln.Addr().String(), Rules{ReorderPct: 50, MaxHold: time.Millisecond})
	for _, bad := range [][]byte{
		append([]byte{9}, make([]byte, 40)...),                          // unknown kind
		frame(contract.KVKindChunk, 5, 0, false, []byte("abcdef"))[:30], // cut mid-frame
	} {
		c := dial(t, r.Addr())
		if err := testkit.Recv(t, sendThen(t, c, bad, true), 5*time.Second); err == nil {
			t.Fatal("a malformed frame got a completion")
		}
	}
	waitStats(t, r, func(s Stats) bool { return s.Malformed == 2 })
	testkit.Eventually(t, 5*time.Second, func() error {
		if s.malformed() != 2 {
			return errors.New("decode has not seen both bad streams")
		}
		return nil
	})
	c := dial(t, r.Addr())
	if err := testkit.Recv(t, send(t, c, frame(contract.KVKindChunk, 6, 0, false, []byte("ok"))), 5*time.Second); err != nil {
		t.Fatalf("a good frame after bad streams: %v", err)
	}
}

// Release ends holds at once, and Close leaves no goroutine (TestMain).
func TestRelayReleaseEndsHolds(t *testing.T) {
	s := newSink(t)
	r := startRelay(t, s.ln.Addr().String(), Rules{ReorderPct: 100, MaxHold: time.Hour})
	c := dial(t, r.Addr())
	done := send(t, c, frame(contract.KVKindChunk, 8, 0, false, []byte("h")))
	waitStats(t, r, func(s Stats) bool { return s.Held == 1 })
	if err := r.Release(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, done, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Released != 1 || st.Reordered != 0 {
		t.Fatalf("stats %+v: want 1 released, 0 reordered", st)
	}
	if err := r.SetRules(Rules{DropPct: 1}); err == nil {
		t.Fatal("SetRules after Release was accepted")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRulesValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    Rules
		ok   bool
	}{
		{"zero", Rules{}, true},
		{"all three", Rules{DropPct: 10, ReorderPct: 40, DelayPct: 50, MaxDelay: time.Millisecond}, true},
		{"over 100", Rules{DropPct: 60, ReorderPct: 50}, false},
		{"negative", Rules{DropPct: -1}, false},
		{"delay without max", Rules{DelayPct: 5}, false},
		{"inverted range", Rules{DelayPct: 5, MinDelay: 2 * time.Second, MaxDelay: time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.r.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tc.r, err, tc.ok)
			}
		})
	}
}
