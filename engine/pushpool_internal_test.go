package engine

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// Messages naming more addresses than maxPushPeers (as hostile ABORTs can)
// start at most maxPushPeers senders, drop and count the rest, and idle
// senders end and are forgotten, so the pool serves new addresses again.
func TestPushPoolBoundsPeers(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := newPushPool(ctx, newLinkTable(), nil, nil, contract.SideDecode, contract.DefaultPushQueueLen)
	// Long enough that no sender retires while the loop below starts them
	// all, on a loaded machine too (50ms was not: 192 of 256 once).
	p.idle = 2 * time.Second
	defer p.wait()
	defer cancel()
	addr := func(i int) string { return fmt.Sprintf("127.0.%d.%d:0", i/250, i%250+1) } // port 0: refused at once
	const n = maxPushPeers + 44
	for i := range n {
		p.send(addr(i), [][]byte{[]byte("ABORT_ACK"), []byte("1")})
	}
	if got := p.size(); got != maxPushPeers {
		t.Fatalf("%d senders for %d addresses, want the cap %d", got, n, maxPushPeers)
	}
	if d := p.dropped.Load(); d < n-maxPushPeers {
		t.Fatalf("dropped %d messages, want at least %d", d, n-maxPushPeers)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if got := p.size(); got != 0 {
			return fmt.Errorf("%d idle senders still running", got)
		}
		return nil
	})
	p.send(addr(n), [][]byte{[]byte("ABORT_ACK"), []byte("1")})
	if got := p.size(); got != 1 {
		t.Fatalf("after the idle senders ended: %d senders, want 1", got)
	}
}

// A peer whose handshake never completes (a black-holed link: the dial
// waits out its 2 s bound) holds the sender, so messages past the pool's
// queue length are dropped at once and counted under the side's
// queue-full probe; the queue length is the config's, not a constant.
func TestPushPoolQueueFull(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Accept and say nothing: the PUSH side's greeting read blocks.
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		_ = ln.Close()
		for c := range accepted {
			_ = c.Close()
		}
	}()
	for _, side := range []string{contract.SidePrefill, contract.SideDecode} {
		t.Run(side, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			probes := &core.ProbeCounts{}
			const queueLen, n = 2, 10
			p := newPushPool(ctx, newLinkTable(), nil, probes, side, queueLen)
			defer p.wait()
			defer cancel()
			for range n {
				p.send(ln.Addr().String(), [][]byte{[]byte("ABORT_ACK"), []byte("1")})
			}
			// At most one message is with the sender and queueLen queued.
			if d := p.dropped.Load(); d < n-queueLen-1 {
				t.Fatalf("dropped %d of %d messages with a queue of %d, want at least %d", d, n, queueLen, n-queueLen-1)
			}
			full := contract.ProbeDecodeControlQueueFull
			if side == contract.SidePrefill {
				full = contract.ProbePrefillNoticeQueueFull
			}
			if got := probes.Count(full); got < n-queueLen-1 {
				t.Fatalf("probe %v counted %d of %d dropped, want at least %d", full, got, p.dropped.Load(), n-queueLen-1)
			}
		})
	}
}
