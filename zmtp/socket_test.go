package zmtp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

func sameMsg(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	push := dial(t, "tcp://"+pull.Addr())
	msgs := [][][]byte{
		{[]byte("one")},
		{[]byte("NixlMsgGuard"), []byte("None"), []byte("127.0.0.1"), []byte("4242")},
		{{}, []byte("empty first frame"), {}},
		{[]byte("ABORT"), []byte("123"), []byte("10.0.0.1"), []byte("17000")},
	}
	for _, m := range msgs {
		if err := push.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range msgs {
		got, err := pull.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sameMsg(got, want) {
			t.Fatalf("message %d: got %q want %q", i, got, want)
		}
	}
	if err := push.Send(ctx, nil); err == nil {
		t.Fatal("empty message accepted")
	}
}

func TestLargeFrames(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	push := dial(t, pull.Addr())
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 255, 256, 300, 65536, 1 << 20, 3<<20 + 7} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(r.Uint32())
		}
		want := [][]byte{[]byte(fmt.Sprint(size)), body, body[:size/2]}
		go func() { _ = push.Send(ctx, want) }()
		got, err := pull.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sameMsg(got, want) {
			t.Fatalf("size %d: message corrupted", size)
		}
	}
}

func TestManyPeersInOrder(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	const peers, per = 12, 150
	var wg sync.WaitGroup
	errs := make(chan error, peers)
	for p := range peers {
		push := dial(t, pull.Addr())
		wg.Go(func() {
			for i := range per {
				if err := push.Send(ctx, [][]byte{[]byte(fmt.Sprint(p)), []byte(fmt.Sprint(i))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	next := make(map[string]int)
	for range peers * per {
		m, err := pull.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		peer, seq := string(m[0]), string(m[1])
		if want := fmt.Sprint(next[peer]); seq != want {
			t.Fatalf("peer %s: got seq %s want %s", peer, seq, want)
		}
		next[peer]++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRecvMessageNamesConnections: messages of one connection share a
// Conn, a second connection or a redial gets a new one, so an owner can tie
// a message to what its peer sent first on the same connection.
func TestRecvMessageNamesConnections(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	recv := func(want string) uint64 {
		t.Helper()
		m, err := pull.RecvMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Frames) != 1 || string(m.Frames[0]) != want {
			t.Fatalf("got %q, want %q", m.Frames, want)
		}
		if m.Conn == 0 {
			t.Fatalf("message %q: connection 0, which means unknown", want)
		}
		return m.Conn
	}
	send := func(p *Push, s string) {
		t.Helper()
		if err := p.Send(ctx, [][]byte{[]byte(s)}); err != nil {
			t.Fatal(err)
		}
	}
	first := dial(t, pull.Addr())
	send(first, "a1")
	send(first, "a2")
	a1, a2 := recv("a1"), recv("a2")
	if a1 != a2 {
		t.Errorf("one connection's messages came as connections %d and %d", a1, a2)
	}
	second := dial(t, pull.Addr())
	send(second, "b1")
	if b1 := recv("b1"); b1 == a1 {
		t.Errorf("a second connection shares connection %d", b1)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := dial(t, pull.Addr())
	send(again, "c1")
	if c1 := recv("c1"); c1 == a1 {
		t.Errorf("a redial shares its old connection's %d", c1)
	}
}

func TestConcurrentSendersOneSocket(t *testing.T) {
	ctx := testkit.Context(t)
	pull := listen(t)
	push := dial(t, pull.Addr())
	const senders, per = 8, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			big := bytes.Repeat([]byte{byte(s)}, 300+s*1000)
			for i := range per {
				if err := push.Send(ctx, [][]byte{[]byte(fmt.Sprint(s)), []byte(fmt.Sprint(i)), big}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	next := make(map[string]int)
	for range senders * per {
		m, err := pull.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 3 {
			t.Fatalf("got %d frames", len(m))
		}
		s := string(m[0])
		if want := fmt.Sprint(next[s]); string(m[1]) != want {
			t.Fatalf("sender %s: got seq %s want %s", s, m[1], want)
		}
		next[s]++
		var id int
		fmt.Sscan(s, &id)
		if !bytes.Equal(m[2], bytes.Repeat([]byte{byte(id)}, 300+id*1000)) {
			t.Fatalf("sender %s: payload interleaved or corrupted", s)
		}
	}
	wg.Wait()
}

func TestCloseUnblocksRecv(t *testing.T) {
	pull, err := Listen(testkit.Context(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var recvErr error
	go func() {
		defer close(done)
		_, recvErr = pull.Recv(context.Background())
	}()
	if err := pull.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, 5*time.Second, "Recv after Close")
	if !errors.Is(recvErr, ErrClosed) {
		t.Fatalf("Recv after Close: %v, want ErrClosed", recvErr)
	}
	if _, err := pull.Recv(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Recv: %v", err)
	}
}

func TestRecvContextCancel(t *testing.T) {
	pull := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pull.Recv(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv on cancelled ctx: %v", err)
	}
}

// blockedPush returns a Push whose peer has stopped reading: one message is
// parked in the Pull and the next cannot be handed over.
func blockedPush(t *testing.T) (*Pull, *Push) {
	pull := listen(t)
	push, err := Dial(testkit.Context(t), pull.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := push.Send(testkit.Context(t), [][]byte{[]byte("parked")}); err != nil {
		t.Fatal(err)
	}
	return pull, push
}

func TestCloseUnblocksSend(t *testing.T) {
	_, push := blockedPush(t)
	huge := make([]byte, 64<<20) // far more than the kernel buffers
	done := make(chan struct{})
	var sendErr error
	go func() {
		defer close(done)
		sendErr = push.Send(context.Background(), [][]byte{huge})
	}()
	if err := push.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, 5*time.Second, "Send after Close")
	if !errors.Is(sendErr, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", sendErr)
	}
}

func TestSendContextCancelBreaksConnection(t *testing.T) {
	_, push := blockedPush(t)
	t.Cleanup(func() { _ = push.Close() })
	huge := make([]byte, 64<<20) // before the deadline starts: zeroing it is slow under -race
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := push.Send(ctx, [][]byte{huge})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked Send with deadline: %v", err)
	}
	if err2 := push.Send(context.Background(), [][]byte{[]byte("x")}); err2 == nil {
		t.Fatalf("Send on a connection broken mid-message succeeded (first error: %v)", err)
	}
}

func TestSendFailsWhenPeerGone(t *testing.T) {
	pull, err := Listen(testkit.Context(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	push := dial(t, pull.Addr())
	if err := pull.Close(); err != nil {
		t.Fatal(err)
	}
	// The reader notices the close; then Send must fail.
	waitDone(t, push.Dead(), 5*time.Second, "Dead after peer close")
	if err := push.Send(testkit.Context(t), [][]byte{[]byte("after close")}); err == nil {
		t.Fatal("Send succeeded after the peer closed")
	}
}
