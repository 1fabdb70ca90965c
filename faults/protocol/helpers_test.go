package protocol

import (
	"context"
	"sync"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/zmtp"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// fakeTarget has links and records Interpose calls; interpose may be
// replaced to fail or block.
type fakeTarget struct {
	links     []contract.Link
	mu        sync.Mutex
	via       string
	restored  int
	interpose func(ctx context.Context, link, via string) error
}

func (f *fakeTarget) Links() []contract.Link { return f.links }
func (f *fakeTarget) Interpose(ctx context.Context, link, via string) (contract.Restore, error) {
	f.mu.Lock()
	f.via = via
	f.mu.Unlock()
	if f.interpose != nil {
		if err := f.interpose(ctx, link, via); err != nil {
			return nil, err
		}
	}
	return func(context.Context) error {
		f.mu.Lock()
		f.restored++
		f.mu.Unlock()
		return nil
	}, nil
}
func (f *fakeTarget) Hooks() (contract.Hooks, error)         { return nil, contract.ErrUnsupported }
func (f *fakeTarget) Processes() (contract.Processes, error) { return nil, contract.ErrUnsupported }

func (f *fakeTarget) viaAddr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.via
}

// pair is a real zmtp PULL (the "prefill") and a fake target whose
// control link points at it.
func pair(t *testing.T) (*zmtp.Pull, *fakeTarget) {
	t.Helper()
	pull, err := zmtp.Listen(testkit.Context(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pull.Close() })
	return pull, &fakeTarget{links: []contract.Link{
		{Name: "control/0", From: "decode", To: "prefill", Kind: contract.LinkZMTP, Addr: pull.Addr()},
		{Name: "bootstrap", From: "decode", To: "prefill", Kind: contract.LinkHTTP, Addr: pull.Addr()},
	}}
}

func dialT(t *testing.T, addr string) *zmtp.Push {
	t.Helper()
	p, err := zmtp.Dial(testkit.Context(t), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func send(t *testing.T, p *zmtp.Push, msgs ...[][]byte) {
	t.Helper()
	for _, m := range msgs {
		if err := p.Send(testkit.Context(t), m); err != nil {
			t.Fatal(err)
		}
	}
}

func recvN(t *testing.T, pull *zmtp.Pull, n int) [][][]byte {
	t.Helper()
	var out [][][]byte
	for range n {
		m, err := pull.Recv(testkit.Context(t))
		if err != nil {
			t.Fatalf("recv after %d: %v", len(out), err)
		}
		out = append(out, m)
	}
	return out
}

func msg(parts ...string) [][]byte {
	out := make([][]byte, len(parts))
	for i, p := range parts {
		out[i] = []byte(p)
	}
	return out
}

func metadata(room string) [][]byte {
	return msg(GuardFrame, room, "127.0.0.1", "17000", "agent", "\x01\x00\x00\x00", "0", "1", "", "0")
}

func abort(room string) [][]byte { return msg(AbortFrame, room, "127.0.0.1", "17000") }

func first(m [][]byte) string {
	if len(m) < 2 {
		return string(m[0]) + "/"
	}
	return string(m[0]) + "/" + string(m[1])
}
