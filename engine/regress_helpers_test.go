package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// holdProxy forwards TCP connections to upstream but holds every byte
// going upstream until Release: a forced "this request arrives later".
type holdProxy struct {
	ln       net.Listener
	upstream string
	release  chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newHoldProxy(t *testing.T, upstream string) *holdProxy {
	t.Helper()
	p := &holdProxy{ln: testkit.Listen(t), upstream: upstream, release: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *holdProxy) Addr() string { return p.ln.Addr().String() }

// Release lets held and future bytes through.
func (p *holdProxy) Release() { p.once.Do(func() { close(p.release) }) }

func (p *holdProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *holdProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c)
		p.track(up)
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, up)
			c.Close()
		}()
		go func() {
			defer p.wg.Done()
			var buf bytes.Buffer
			chunk := make([]byte, 32<<10)
			go func() { <-p.release; c.SetReadDeadline(time.Now()) }()
			for {
				n, err := c.Read(chunk)
				buf.Write(chunk[:n])
				if err != nil {
					break
				}
			}
			<-p.release
			c.SetReadDeadline(time.Time{})
			_, _ = up.Write(buf.Bytes())
			_, _ = io.Copy(up, c)
			up.Close()
		}()
	}
}

func (p *holdProxy) close() {
	p.Release()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

var (
	allWorkers    = contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: -1}
	bootstrapLoop = contract.HookSpec{Hook: contract.HookBootstrapLoop, Role: "prefill", Rank: -1, Worker: -1}
	decodeSched   = contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: -1, Worker: -1}
)

func hooksOf(t *testing.T, c *engine.Cluster) contract.Hooks {
	t.Helper()
	h, err := c.Hooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.ResumeAll(context.Background()) })
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// held returns the gate of spec kind that has held an actor, if any.
func heldWorker(ctx context.Context, h contract.Hooks) (contract.HookState, error) {
	st, err := h.State(ctx)
	if err != nil {
		return contract.HookState{}, err
	}
	for _, s := range st {
		if s.Hook == contract.HookTransferWorkers && s.Held > 0 {
			return s, nil
		}
	}
	return contract.HookState{}, fmt.Errorf("no transfer worker holds a chunk yet")
}

func abortOn(t *testing.T, base, rid string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"rid": rid})
	resp, err := http.Post(base+"/abort_request", "application/json", bytes.NewReader(body))
	must(t, err)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
}

func healthy(ctx context.Context, c *engine.Cluster) error { return c.Health(ctx) }
