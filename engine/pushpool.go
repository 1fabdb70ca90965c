package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/zmtp"
)

// pushPool sends control messages to ZMTP PULL peers without blocking the
// caller: one queue and one sender goroutine per peer address, like a
// libzmq PUSH socket with its send buffer. A broken connection loses the
// message being sent (as libzmq does on reset) and is redialled for the
// next one; hello, if set, is sent first on every new connection (decode's
// registration).
type pushPool struct {
	ctx     context.Context
	links   *linkTable
	hello   func(addr string) [][]byte
	mu      sync.Mutex
	peers   map[string]*pushPeer
	wg      sync.WaitGroup
	dropped atomic.Int64
	sent    atomic.Int64
	// probes counts lost messages; side says whose (prefill's notices or
	// decode's control messages).
	probes *core.ProbeCounts
	side   string
	idle   time.Duration // pushIdle; tests shorten it
	// queueLen is each peer's queue (EngineConfig.PushQueueLen).
	queueLen int
}

// hit counts a lost message under the probe of the pool's side.
func (p *pushPool) hit(onPrefill, onDecode contract.ProbeID) {
	if p.side == contract.SidePrefill {
		p.probes.Hit(onPrefill)
	} else {
		p.probes.Hit(onDecode)
	}
}

type pushPeer struct {
	addr string
	q    chan [][]byte
	// redial asks the sender to drop its connection before the next
	// message (reset), so that message goes on a new one after hello.
	redial atomic.Bool
}

// maxPushPeers bounds the peers a pool sends to at once. The addresses
// come from peers' messages (an ABORT names where its ACK goes), so a
// hostile peer naming a new address with every message must not grow a
// goroutine and a queue each without bound: past the cap, messages to new
// addresses are dropped (and counted) until idle peers are gone.
const maxPushPeers = 256

// pushIdle is how long a peer's sender waits for a message before it
// ends and forgets the peer; the next message dials afresh.
const pushIdle = 30 * time.Second

// newPushPool returns a pool whose peers each queue up to queueLen
// messages (EngineConfig.PushQueueLen, resolved: at least 1).
func newPushPool(ctx context.Context, links *linkTable, hello func(addr string) [][]byte, probes *core.ProbeCounts, side string, queueLen int) *pushPool {
	return &pushPool{ctx: ctx, links: links, hello: hello, peers: map[string]*pushPeer{}, probes: probes, side: side, idle: pushIdle, queueLen: queueLen}
}

// send queues msg for addr; it never blocks.
func (p *pushPool) send(addr string, msg [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	peer, ok := p.peers[addr]
	if !ok {
		if p.ctx.Err() != nil {
			return
		}
		if len(p.peers) >= maxPushPeers {
			p.dropped.Add(1)
			return
		}
		peer = &pushPeer{addr: addr, q: make(chan [][]byte, p.queueLen)}
		p.peers[addr] = peer
		p.wg.Add(1)
		go p.run(peer)
	}
	// Queued under the lock, so a sender that is retiring for idleness
	// either sees this message or is already forgotten.
	select {
	case peer.q <- msg:
	default:
		p.hit(contract.ProbePrefillNoticeQueueFull, contract.ProbeDecodeControlQueueFull)
		p.dropped.Add(1)
	}
}

// retire forgets peer if nothing is queued for it, and reports whether it
// did; its sender then ends.
func (p *pushPool) retire(peer *pushPeer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(peer.q) > 0 {
		return false
	}
	delete(p.peers, peer.addr)
	return true
}

// reset closes the connection to addr, if one is open, before the next
// message is sent: that message starts a new connection with a fresh
// hello, as SGLang closes its PUSH sockets to a prefill it declared lost.
// Messages already queued are kept.
func (p *pushPool) reset(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if peer, ok := p.peers[addr]; ok {
		peer.redial.Store(true)
	}
}

// size is the number of peers with a running sender.
func (p *pushPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.peers)
}

func (p *pushPool) run(peer *pushPeer) {
	defer p.wg.Done()
	var conn *zmtp.Push
	var gen uint64
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		var msg [][]byte
		select {
		case <-p.ctx.Done():
			return
		case <-idle.C:
			if p.retire(peer) {
				return
			}
			idle.Reset(p.idle)
			continue
		case msg = <-peer.q:
		}
		idle.Reset(p.idle)
		if conn != nil && (p.links.generation() != gen || peer.redial.Load()) {
			_ = conn.Close()
			conn = nil
		}
		if conn == nil {
			peer.redial.Store(false)
			var err error
			conn, gen, err = p.connect(peer.addr)
			if err != nil {
				p.hit(contract.ProbePrefillNoticeConnectFailed, contract.ProbeDecodeControlConnectFailed)
				p.dropped.Add(1)
				continue
			}
		}
		if err := conn.Send(p.ctx, msg); err != nil {
			p.hit(contract.ProbePrefillNoticeSendFailed, contract.ProbeDecodeControlSendFailed)
			p.dropped.Add(1)
			_ = conn.Close()
			conn = nil
			continue
		}
		p.sent.Add(1)
	}
}

func (p *pushPool) connect(addr string) (*zmtp.Push, uint64, error) {
	target, gen := p.links.resolve(addr)
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	conn, err := zmtp.Dial(ctx, target)
	if err != nil {
		return nil, 0, err
	}
	if p.hello != nil {
		if err := conn.Send(ctx, p.hello(addr)); err != nil {
			_ = conn.Close()
			return nil, 0, err
		}
	}
	return conn, gen, nil
}

// wait blocks until every sender goroutine has ended (after ctx is done).
func (p *pushPool) wait() { p.wg.Wait() }
