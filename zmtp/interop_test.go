package zmtp_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/zmtp"
	"github.com/pdchaos/pdchaos/zmtp/zmtptest"
)

// interopMessages are multipart messages shaped like the control link's,
// plus long frames, empty frames and odd sizes.
func interopMessages(n int) [][][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	msgs := make([][][]byte, n)
	for i := range msgs {
		switch i % 4 {
		case 0:
			msgs[i] = [][]byte{[]byte("ABORT"), []byte(fmt.Sprint(r.Uint64() >> 1)), []byte("127.0.0.1"), []byte("17000")}
		case 1:
			pages := make([]byte, 4*(1+r.IntN(200)))
			for j := range pages {
				pages[j] = byte(r.Uint32())
			}
			msgs[i] = [][]byte{[]byte("NixlMsgGuard"), []byte(fmt.Sprint(i)), []byte("127.0.0.1"), []byte("17000"), []byte("agent"), pages, []byte("3"), []byte("1"), {}, []byte("0")}
		case 2:
			msgs[i] = [][]byte{{}}
		default:
			big := make([]byte, 256+r.IntN(70000))
			for j := range big {
				big[j] = byte(r.Uint32())
			}
			msgs[i] = [][]byte{[]byte(fmt.Sprint(i)), big}
		}
	}
	return msgs
}

func equalMsgs(t *testing.T, got, want [][][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("message %d: %d frames, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !bytes.Equal(got[i][j], want[i][j]) {
				t.Fatalf("message %d frame %d differs", i, j)
			}
		}
	}
}

// recvAll receives n messages with recv, failing the test at the first
// error.
func recvAll(t *testing.T, n int, recv func() ([][]byte, error)) [][][]byte {
	t.Helper()
	var got [][][]byte
	for range n {
		m, err := recv()
		if err != nil {
			t.Fatalf("recv after %d messages: %v", len(got), err)
		}
		got = append(got, m)
	}
	return got
}

// sendAll sends every message on push, failing the test at the first error.
func sendAll(t *testing.T, ctx context.Context, push *zmtp.Push, msgs [][][]byte) {
	t.Helper()
	for _, m := range msgs {
		if err := push.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInteropPyzmqPushToOurPull(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pull, err := zmtp.Listen(ctx, "tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	want := interopMessages(200)
	errc := make(chan error, 1)
	go func() { errc <- zmtptest.PyPush(ctx, pull.Addr(), want) }()
	got := recvAll(t, len(want), func() ([][]byte, error) { return pull.Recv(ctx) })
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	equalMsgs(t, got, want)
}

func TestInteropOurPushToPyzmqPull(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := interopMessages(200)
	py, err := zmtptest.StartPyPull(ctx, len(want))
	if err != nil {
		t.Fatal(err)
	}
	push, err := zmtp.Dial(ctx, py.Addr)
	if err != nil {
		cancel()
		_, _ = py.Wait()
		t.Fatal(err)
	}
	defer push.Close()
	sendAll(t, ctx, push, want)
	got, err := py.Wait()
	if err != nil {
		t.Fatal(err)
	}
	equalMsgs(t, got, want)
}

// libzmq heartbeats its peers (ZMTP 3.1 PING) where ZMQ_HEARTBEAT_IVL is
// set, and drops one that does not answer PONG within its timeout. Our
// PUSH, which never redials on its own, answers: the connection outlives
// four heartbeat timeouts (forty pings) and then carries every message.
func TestInteropOurPushAnswersPyzmqHeartbeats(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ivl = 50 * time.Millisecond // libzmq's timeout: ten intervals
	want := interopMessages(20)
	py, err := zmtptest.StartPyPullHeartbeat(ctx, len(want), ivl)
	if err != nil {
		t.Fatal(err)
	}
	push, err := zmtp.Dial(ctx, py.Addr)
	if err != nil {
		cancel()
		_, _ = py.Wait()
		t.Fatal(err)
	}
	defer push.Close()
	select {
	case <-push.Dead():
		t.Fatalf("libzmq dropped our PUSH while it heartbeat it: %v", push.Err())
	case <-time.After(4 * 10 * ivl):
	}
	sendAll(t, ctx, push, want)
	got, err := py.Wait()
	if err != nil {
		t.Fatal(err)
	}
	equalMsgs(t, got, want)
}
