package sim

import (
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// pusher is one role's ZMTP PUSH sender to one peer socket, as the live
// push pool runs it (engine/pushpool.go): on an open connection a message
// goes out at once; without one, the first message waits for a dial whose
// handshake the peer's process must answer, and those behind it queue, up
// to EngineConfig.PushQueueLen (past it they are dropped, counted by the
// side's queue-full probe). A dial the peer refuses (its process dead, its
// link down) loses the message it was for at once; one nothing answers
// (the peer's process stopped, or its link black-holed) is given up after
// dialTimeout, losing that message too; either way the next queued
// message dials again. Decode says hello (its registration) first on
// every new connection.
type pusher struct {
	link string // control/N (decode's sender to prefill rank N) or notify/N (prefill rank N's to decode)
	// decode: decode's sender of control messages, else prefill's of
	// notices.
	decode bool
	// rank is the prefill rank a control message goes to, or the decode
	// rank whose inbox a notice lands in.
	rank      int
	connected bool
	dialing   bool
	// gen counts the dials started and the resets: a dial's outcome is
	// void once a newer dial started or the sender was reset.
	gen   int
	queue [][][]byte
	// id numbers the sender in its run, from 1 (run.connOf).
	id uint64
}

// dialTimeout is the push pool's bound on a dial and its handshake.
const dialTimeout = 2 * time.Second

// push sends frames on p, dialling first when p has no connection.
func (s *run) push(p *pusher, frames [][]byte) {
	switch {
	case p.dialing:
		// The head of the queue is the message being dialled for, which
		// the live sender has already taken off its queue of
		// push_queue_len: that many more wait behind it.
		if len(p.queue) > s.cfg.PushQueueLen {
			s.pushLost(p, contract.ProbeDecodeControlQueueFull, contract.ProbePrefillNoticeQueueFull, frames, "the send queue is full while the sender dials")
			return
		}
		p.queue = append(p.queue, frames)
	case !p.connected:
		p.queue = append(p.queue, frames)
		s.dial(p)
	default:
		s.pushSend(p, frames)
	}
}

// dial opens p's connection for its queued messages.
func (s *run) dial(p *pusher) {
	p.dialing = true
	p.gen++
	gen, start := p.gen, s.now
	fail := func(why string) {
		if p.gen != gen || !p.dialing {
			return
		}
		p.dialing = false
		head := p.queue[0]
		p.queue = p.queue[1:]
		s.pushLost(p, contract.ProbeDecodeControlConnectFailed, contract.ProbePrefillNoticeConnectFailed, head, why)
		if len(p.queue) > 0 {
			s.dial(p)
		}
	}
	if s.peerDown(p) {
		s.after(s.baseLatency(), p.link, func() { fail("dial refused: the peer's process is down") })
		return
	}
	if s.linkFault(p.link, "link-down") {
		s.after(s.baseLatency(), p.link, func() { fail("dial refused: the link is down") })
		return
	}
	if s.linkFault(p.link, "timeout") {
		// The handshake's bytes are black-holed: nothing answers it,
		// even once the window ends.
		s.after(dialTimeout, p.link, func() { fail("handshake timed out: the link black-holed it") })
		return
	}
	var try func()
	try = func() {
		if p.gen != gen || !p.dialing {
			return
		}
		switch {
		case s.peerDown(p):
			fail("connection reset: the peer's process died during the handshake")
			return
		case s.peerFrozen(p):
			// The peer's process answers the greeting once it continues.
			if s.now-start >= dialTimeout {
				fail("handshake timed out: the peer's process is stopped")
				return
			}
			s.untilContinues(s.peerRole(p), start+dialTimeout, p.link, try)
			return
		}
		p.dialing, p.connected = false, true
		s.tracef("net", "CONNECTED %s", p.link)
		if p.decode {
			s.pushSend(p, s.d.Registration(p.rank, bootstrapAddr))
		}
		for len(p.queue) > 0 && p.connected {
			f := p.queue[0]
			p.queue = p.queue[1:]
			s.pushSend(p, f)
		}
		if len(p.queue) > 0 { // a send broke the new connection
			s.dial(p)
		}
	}
	s.after(s.baseLatency(), p.link, try)
}

// pushLost counts and traces a message p could not send.
func (s *run) pushLost(p *pusher, onDecode, onPrefill contract.ProbeID, frames [][]byte, why string) {
	if p.decode {
		s.dprobes.Hit(onDecode)
	} else {
		s.pprobes.Hit(onPrefill)
	}
	s.tracef("net", "LOST %s on %s: %s", s.framesDesc(frames), p.link, why)
}

func (s *run) peerDown(p *pusher) bool { return s.down(s.peerRole(p)) }

func (s *run) peerFrozen(p *pusher) bool { return s.frozen(s.peerRole(p)) }

// peerRole is the role p sends to.
func (s *run) peerRole(p *pusher) string {
	if p.decode {
		return contract.SidePrefill
	}
	return contract.SideDecode
}

// linkFault reports whether a window of kind is on link now, counting
// the dial it met as the window's evidence.
func (s *run) linkFault(link, kind string) bool {
	for _, wn := range s.windows {
		if wn.active && wn.f.Kind == kind && wn.f.Link == link {
			wn.affected++
			return true
		}
	}
	return false
}

// disconnect breaks the connections of every sender on link: the next
// message dials afresh (decode saying hello first).
func (s *run) disconnect(link string) {
	for _, p := range s.pushers() {
		if p.link == link {
			p.connected = false
		}
	}
}

// resetPushers drops the senders of a process that died, with what they
// had queued, and breaks the connections of the senders towards it.
func (s *run) resetPushers(role string) {
	for _, p := range s.pushers() {
		if p.decode == (role == contract.SideDecode) {
			p.gen++
			p.connected, p.dialing, p.queue = false, false, nil
		} else {
			p.connected = false
		}
	}
}

// pushers are every sender of the run, decode's control senders first.
func (s *run) pushers() []*pusher {
	return append(append([]*pusher(nil), s.ctlPush...), s.notifyPush...)
}
