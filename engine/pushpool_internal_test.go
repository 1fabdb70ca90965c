package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// Messages naming more addresses than maxPushPeers (as hostile ABORTs can)
// start at most maxPushPeers senders, drop and count the rest, and idle
// senders end and are forgotten, so the pool serves new addresses again.
func TestPushPoolBoundsPeers(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := newPushPool(ctx, newLinkTable(), nil, nil, contract.SideDecode)
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
