package zmtp_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/pdchaos/pdchaos/zmtp"
)

// go-zeromq/zmq4 is a ZMTP implementation of its own (pure Go, not
// libzmq): a second peer whose greeting, READY and framing were written
// by other hands. Its PUSH talks to our PULL and our PUSH to its PULL,
// with the control link's messages, long frames and empty ones.

func TestInteropZmq4PushToOurPull(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	pull, err := zmtp.Listen(ctx, "tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	push := zmq4.NewPush(ctx)
	defer push.Close()
	if err := push.Dial("tcp://" + pull.Addr()); err != nil {
		t.Fatal(err)
	}
	want := interopMessages(200)
	errc := make(chan error, 1)
	go func() {
		for _, m := range want {
			if err := push.Send(zmq4.NewMsgFrom(m...)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	got := recvAll(t, len(want), func() ([][]byte, error) { return pull.Recv(ctx) })
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	equalMsgs(t, got, want)
}

func TestInteropOurPushToZmq4Pull(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	pull := zmq4.NewPull(ctx)
	defer pull.Close()
	if err := pull.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	push, err := zmtp.Dial(ctx, pull.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close()
	want := interopMessages(200)
	go func() {
		for _, m := range want {
			if push.Send(ctx, m) != nil {
				return
			}
		}
	}()
	got := recvAll(t, len(want), func() ([][]byte, error) {
		m, err := pull.Recv()
		return m.Frames, err
	})
	equalMsgs(t, got, want)
}
