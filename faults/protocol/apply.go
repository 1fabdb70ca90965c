package protocol

import (
	"bufio"
	"bytes"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/zmtp"
)

// queue runs one message (or command, msg nil) through the rules and
// queues its output on c. Called by c's reader only.
func (p *Proxy) queue(c *pconn, raw []byte, msg *Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	e := &entry{c: c, seq: p.next(), raw: raw, msg: msg, at: now, index: -1}
	if c.lastAt.After(now) {
		e.at = c.lastAt
	}
	if msg == nil {
		c.push(e)
		return
	}
	p.stats.Seen[msg.Kind]++
	r := p.match(*msg)
	if r == nil {
		c.push(e)
		return
	}
	switch r.Action {
	case ActPass:
		c.push(e)
	case ActDrop:
		p.act(r)
		p.stats.Dropped++
	case ActDuplicate:
		p.act(r)
		p.stats.Duplicated++
		c.push(e)
		c.push(&entry{c: c, seq: p.next(), raw: raw, msg: msg, at: e.at, index: -1})
	case ActCorrupt:
		p.act(r)
		p.stats.Corrupted++
		e.raw = reencode(raw, r.Corrupt(*msg))
		c.push(e)
	case ActDelay:
		d := time.Duration(0)
		if r.Delay != nil {
			d = max(r.Delay(*msg), 0)
		}
		p.act(r)
		p.stats.Delayed++
		p.stats.DelayMs += d.Milliseconds()
		if at := now.Add(d); at.After(e.at) {
			e.at = at
		}
		if r.KeepOrder {
			c.lastAt = e.at
		}
		c.push(e)
	case ActHold:
		if r.ReleaseOnAbort && msg.HasRoom {
			if _, gone := p.aborted[msg.Room]; gone {
				c.push(e) // its ABORT already passed: nothing to reorder
				return
			}
		}
		p.act(r)
		p.stats.Held++
		e.held = true
		e.releaseOnAbort = r.ReleaseOnAbort && msg.HasRoom
		if r.ReleaseAfter > 0 {
			e.releaseAfter = p.forwarded + uint64(r.ReleaseAfter)
		}
		e.at = farFuture
		if r.MaxHold > 0 {
			e.at = now.Add(r.MaxHold)
		}
		p.held = append(p.held, e)
		c.push(e)
	}
}

func (p *Proxy) next() uint64 {
	p.seq++
	return p.seq
}

// match returns the first rule that selects m. Caller holds p.mu.
func (p *Proxy) match(m Message) *Rule {
	for i := range p.rules {
		if p.rules[i].matches(m) {
			return &p.rules[i]
		}
	}
	return nil
}

func (p *Proxy) act(r *Rule) {
	r.used++
	p.stats.Matched++
}

// written updates counters after e reached the upstream socket. Caller
// holds p.mu.
func (p *Proxy) written(e *entry) {
	c := e.c
	if e.seq < c.maxWritten {
		if e.msg != nil {
			p.stats.Reordered++
		}
	} else {
		c.maxWritten = e.seq
	}
	if e.msg == nil {
		return
	}
	if e.byAbort {
		p.stats.Overtaken++
	}
	if i := slices.Index(p.held, e); i >= 0 {
		// Released by MaxHold.
		p.held = slices.Delete(p.held, i, i+1)
		p.stats.Released++
		p.stats.TimedOut++
	}
}

// popped runs when e is taken for writing: it releases held messages whose
// count of later messages is reached, and an ABORT releases its room's held
// messages, so they go out right behind e, in the same write when on the
// same connection. Caller holds p.mu.
func (p *Proxy) popped(e *entry) {
	if e.msg == nil {
		return
	}
	p.forwarded++
	kept := p.held[:0]
	for _, h := range p.held {
		if h != e && h.releaseAfter > 0 && p.forwarded >= h.releaseAfter {
			p.stats.Released++
			h.c.releaseAt(h, e.at)
			continue
		}
		kept = append(kept, h)
	}
	clear(p.held[len(kept):])
	p.held = kept
	if e.msg.Kind != KindAbort {
		return
	}
	if slices.ContainsFunc(p.rules, func(r Rule) bool { return r.ReleaseOnAbort }) {
		p.aborted[e.msg.Room] = struct{}{}
	}
	kept = p.held[:0]
	for _, h := range p.held {
		if h.releaseOnAbort && h.msg.Room == e.msg.Room {
			p.stats.Released++
			h.byAbort = true
			h.c.releaseAt(h, e.at)
			continue
		}
		kept = append(kept, h)
	}
	clear(p.held[len(kept):])
	p.held = kept
}

// reencode is frames as ZMTP message frames, followed by the commands raw
// carried inside its message (a heartbeat PING must still reach the peer).
func reencode(raw []byte, frames [][]byte) []byte {
	var b []byte
	for _, f := range zmtp.MessageFrames(frames) {
		b = zmtp.AppendFrame(b, f)
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		f, err := zmtp.ReadFrame(br)
		if err != nil {
			return b
		}
		if f.IsCommand() {
			b = zmtp.AppendFrame(b, f)
		}
	}
}
