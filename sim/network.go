package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/faults"
)

// link is one simulated connection. Messages on it arrive in order (TCP)
// unless a fault lets one be overtaken.
type link struct {
	name string
	last time.Duration // arrival of the latest in-order message
	// free is when a bandwidth window lets the connection's next bytes
	// out: messages queue behind each other's transmission.
	free time.Duration
}

// msg is one message in flight.
type msg struct {
	kind    string // registration, metadata, abort, ack, status, chunk, http, ...
	room    uint64
	desc    string
	deliver func()
	// lost, when set, is what the sender sees of a message lost on the
	// way (a KV write's completion failing); nil: nothing.
	lost func()
	// frames are a control message's frames, which deliver hands on: a
	// corrupt-messages fault replaces them.
	frames [][]byte
	// size is the message's bytes on the wire, for the faults that count
	// or pace bytes (bandwidth, slicer, limit-data); 0: they pass it.
	size int
	// cut, when set, is what the receiver sees of a message a connection
	// closed part-way through (limit-data): a frame that ends early.
	cut func()
}

// held is a message a hold fault keeps back.
type held struct {
	m    *msg
	l    *link
	left int // later messages still to pass before release; -1: by time only
	// overtaken: a later message passed it (kv-chunks counts a reorder
	// only then).
	overtaken bool
}

// baseLatency is a loopback hop's latency: small, and drawn, so that
// messages on different links interleave differently per seed.
func (s *run) baseLatency() time.Duration {
	return s.between(20*time.Microsecond, 300*time.Microsecond)
}

func (s *run) link(name string) *link {
	l, ok := s.links[name]
	if !ok {
		l = &link{name: name}
		s.links[name] = l
	}
	return l
}

// transmit sends m on connection conn through the active faults on its
// link. conn is the link's name, or the name, '#' and a connection key
// where the link carries many connections (a worker's KV stream, one
// HTTP request): order holds per connection, faults match by link name.
// directed reports whether a network fault kind acts on one direction of a
// connection (Fault.Stream), as a Toxiproxy toxic does; a connection reset,
// a timeout or a link taken down stops both.
func directed(kind string) bool {
	switch kind {
	case "latency", "bandwidth", "slicer", "limit-data":
		return true
	}
	return false
}

func (s *run) transmit(conn string, m *msg) {
	l := s.link(conn)
	name, _, _ := strings.Cut(conn, "#")
	lost, cut, dup, fifo := false, false, false, true
	var extra time.Duration
	// A connection's answers travel on its name with a "<" after it.
	downstream := strings.HasSuffix(conn, "<")
	for _, wn := range s.windows {
		if !wn.active || wn.f.Link != name {
			continue
		}
		if directed(wn.f.Kind) && downstream != (wn.f.Stream != "upstream") {
			continue // a toxic on the other direction
		}
		switch wn.f.Kind {
		case "reset-peer", "link-down", "timeout":
			lost = true
			wn.affected++
		case "latency":
			extra += wn.f.Delay
			wn.affected++
		case "bandwidth":
			// The connection sends RateKB KB/s while the window lasts:
			// the message leaves once the ones before it have and takes
			// its size's worth, and what is left when the window heals
			// goes at the line's speed.
			if m.size > 0 {
				tx := time.Duration(int64(m.size) * int64(time.Second) / (int64(wn.f.RateKB) * 1024))
				start := max(l.free, s.now+extra)
				l.free = max(min(start+tx, wn.end), start)
				extra = l.free - s.now
				wn.affected++
			}
		case "slicer":
			// Written in slices of AverageSize bytes, Delay apart; the
			// receiver reassembles the frame, so only the time shows.
			if n := (m.size + wn.f.AverageSize - 1) / wn.f.AverageSize; n > 1 {
				extra += time.Duration(n-1) * wn.f.Delay
				wn.affected++
			}
		case "limit-data":
			// Each connection carries Bytes, then the proxy closes it: the
			// message that crosses the budget is cut where it did, and
			// the sender's next message goes on a new connection.
			if m.size > 0 {
				if wn.sent == nil {
					wn.sent = map[string]int{}
				}
				if got := wn.sent[conn]; got+m.size > wn.f.Bytes {
					delete(wn.sent, conn)
					lost, cut = true, got < wn.f.Bytes
					wn.affected++
				} else {
					wn.sent[conn] = got + m.size
				}
			}
		case "delay-messages":
			if wn.matchesKind(m.kind) {
				extra += s.between(wn.f.Min, wn.f.Max)
				fifo = wn.f.KeepOrder
				wn.affected++
			}
		case "drop-messages":
			if wn.matchesKind(m.kind) && (wn.f.Limit == 0 || wn.used < wn.f.Limit) {
				wn.used++
				wn.affected++
				lost = true
			}
		case "duplicate-messages":
			if wn.matchesKind(m.kind) && (wn.f.Limit == 0 || wn.used < wn.f.Limit) {
				wn.used++
				wn.affected++
				dup = true
			}
		case "hold-messages":
			if wn.matchesKind(m.kind) {
				s.hold(wn, l, m, wn.f.AfterMessages)
				return
			}
			s.countdown(wn)
		case "corrupt-messages":
			if m.frames != nil && wn.matchesKind(m.kind) && (wn.f.Limit == 0 || wn.used < wn.f.Limit) {
				wn.used++
				wn.affected++
				m.frames = faults.CorruptFrames(m.frames, wn.f.Mode)
				s.tracef("net", "CORRUPT %s %s on %s: now %s", m.kind, m.desc, name, s.framesDesc(m.frames))
			}
		case "kv-chunks":
			if m.kind != "chunk" {
				break
			}
			f := wn.f
			switch n := s.rng.IntN(100); {
			case n < f.DropPct:
				wn.affected++
				lost = true
			case n < f.DropPct+f.ReorderPct:
				// Held until later chunks on the link passed it: the
				// live relay's reorder, counted when it is overtaken.
				h := &held{m: m, l: l, left: max(f.AfterChunks, 1)}
				wn.held = append(wn.held, h)
				s.tracef("net", "HOLD %s %s on %s", m.kind, m.desc, l.name)
				hold := f.MaxHold
				if hold <= 0 {
					hold = 500 * time.Millisecond // the catalogue's default
				}
				s.after(hold, "net", func() { s.release(wn, h) })
				return
			case n < f.DropPct+f.ReorderPct+f.DelayPct:
				wn.affected++
				extra += s.between(f.MinDelay, f.MaxDelay)
				s.overtake(wn)
			default:
				s.overtake(wn)
			}
		case "abort-before-metadata":
			switch m.kind {
			case "metadata":
				s.hold(wn, l, m, -1)
				return
			case "abort":
				defer s.releaseRoom(wn, m.room)
			}
		}
	}
	if lost {
		s.tracef("net", "LOST %s %s on %s", m.kind, m.desc, name)
		s.lostOn(name)
		if cut && m.cut != nil {
			s.after(s.baseLatency()+extra, l.name, m.cut)
		}
		if m.lost != nil {
			m.lost()
		}
		return
	}
	s.put(l, m, extra, fifo)
	if dup {
		s.tracef("net", "DUP %s %s on %s", m.kind, m.desc, name)
		s.put(l, m, extra, fifo)
	}
}

// put schedules m's arrival on l.
func (s *run) put(l *link, m *msg, extra time.Duration, fifo bool) {
	at := s.now + s.baseLatency() + extra
	if fifo {
		at = max(at, l.last+1) // strictly after: a tie would let the scheduler reorder a TCP stream
		l.last = at
	}
	if extra > 0 {
		s.tracef("net", "%s %s on %s delayed %v", m.kind, m.desc, l.name, extra)
	}
	s.arriveAt(at, l, m)
}

// arrive delivers m on l.
func (w *world) arrive(l *link, m *msg) {
	if w.trace != nil {
		w.tracef(traceLabel(l.name), "recv %s %s", m.kind, m.desc)
	}
	m.deliver()
}

// traceLabel is the actor a link's deliveries are traced under: a router
// link carries one connection per request, and the desc names it.
func traceLabel(conn string) string {
	label := conn
	if strings.HasPrefix(label, "router-") {
		base, _, _ := strings.Cut(label, "#")
		label = base
		if strings.HasSuffix(conn, "<") {
			label += "<"
		}
	}
	return label
}

// describe is a message's desc for the trace: a+b, or "" when not
// tracing (nothing else reads it).
func (s *run) describe(a, b string) string {
	if s.trace == nil {
		return ""
	}
	return a + b
}

// framesDesc is framesString(f) when tracing, else "".
func (s *run) framesDesc(f [][]byte) string {
	if s.trace == nil {
		return ""
	}
	return framesString(f)
}

func (s *run) hold(wn *window, l *link, m *msg, left int) {
	wn.affected++
	h := &held{m: m, l: l, left: left}
	wn.held = append(wn.held, h)
	s.tracef("net", "HOLD %s %s on %s", m.kind, m.desc, l.name)
	if wn.f.MaxHold > 0 {
		s.after(wn.f.MaxHold, "net", func() { s.release(wn, h) })
	}
}

// countdown lets one message pass the holds of wn; those whose count runs
// out are released behind it.
func (s *run) countdown(wn *window) {
	for _, h := range append([]*held(nil), wn.held...) {
		if h.left > 0 {
			h.left--
			if h.left == 0 {
				s.release(wn, h)
			}
		}
	}
}

// overtake lets one chunk pass kv-chunks' holds: each held chunk it
// overtook counts as reordered once (the window's evidence, as the live
// relay counts only holds something overtook), and those whose count runs
// out are released behind it.
func (s *run) overtake(wn *window) {
	for _, h := range append([]*held(nil), wn.held...) {
		if !h.overtaken {
			h.overtaken = true
			wn.affected++
		}
		if h.left > 0 {
			h.left--
			if h.left == 0 {
				s.release(wn, h)
			}
		}
	}
}

func (s *run) releaseRoom(wn *window, room uint64) {
	for _, h := range append([]*held(nil), wn.held...) {
		if h.m.room == room {
			s.release(wn, h)
		}
	}
}

// release delivers a held message (once) behind what already passed.
func (s *run) release(wn *window, h *held) {
	for i, x := range wn.held {
		if x == h {
			wn.held = append(wn.held[:i], wn.held[i+1:]...)
			s.tracef("net", "RELEASE %s %s on %s", h.m.kind, h.m.desc, h.l.name)
			s.put(h.l, h.m, 0, true)
			return
		}
	}
}

// lostOn notes a connection on link broken by a fault: its senders dial
// afresh for their next message (decode saying hello first), as the push
// pool does after a reset.
func (s *run) lostOn(name string) { s.disconnect(name) }

// controlKind classifies a decode→prefill message for fault matching.
func (s *run) controlKind(frames [][]byte) (string, uint64) {
	c, _ := s.wire.ParseControl(frames)
	switch c.Kind {
	case core.MsgRegistration:
		return "registration", 0
	case core.MsgMetadata:
		return "metadata", c.Metadata.Room
	case core.MsgAbort:
		return "abort", c.Abort.Room
	}
	return "unknown", 0
}

// noticeKind classifies a prefill→decode message.
func (s *run) noticeKind(frames [][]byte) (string, uint64) {
	n, err := s.wire.ParseNotice(frames)
	switch {
	case err != nil:
		return "unknown", 0
	case n.Kind == core.MsgAbortAck:
		return "ack", n.Room
	}
	return "status", n.Room
}

// zmtpLen is a multipart message's bytes on a ZMTP connection: each
// frame's body and its header (short up to 255 bytes, long above).
func zmtpLen(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f) + 2
		if len(f) > 255 {
			n += 7
		}
	}
	return n
}

func framesString(f [][]byte) string {
	parts := make([]string, 0, len(f))
	for _, b := range f {
		if len(b) > 24 {
			parts = append(parts, fmt.Sprintf("<%d bytes>", len(b)))
		} else {
			parts = append(parts, fmt.Sprintf("%q", b))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
