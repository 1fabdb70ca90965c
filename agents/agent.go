package agents

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/engine/model"
)

// errorBackoff is the pause after a request that ended in error, so an agent
// facing a dead endpoint does not spin; it is not drawn, so it does not
// disturb the decision sequence.
const errorBackoff = 100 * time.Millisecond

// entry is one context message with its JSON encoding, computed once, so that
// building a request body is a concatenation rather than a re-encode.
type entry struct {
	msg   model.Message
	json  []byte
	words int
	tool  bool
}

func newEntry(role, content string, words int, tool bool) entry {
	m := model.Message{Role: role, Content: content}
	b, _ := json.Marshal(m) // a struct of two strings always encodes
	return entry{msg: m, json: b, words: words, tool: tool}
}

// convo is one agent's context: the shared system prompt (not copied) plus a
// bounded list of turns; the oldest tool outputs go first when it is full.
type convo struct {
	system  *entry
	entries []entry
	words   int
	max     int
}

func (c *convo) reset() {
	clear(c.entries)
	c.entries, c.words = c.entries[:0], 0
}

func (c *convo) add(e entry) {
	c.entries = append(c.entries, e)
	c.words += e.words
	for c.words > c.max && len(c.entries) > 1 {
		// Oldest tool output first (never the newest entry); failing that the
		// oldest message after the session's opening prompt.
		drop := 0
		if len(c.entries) > 2 {
			drop = 1
		}
		for i, x := range c.entries[:len(c.entries)-1] {
			if x.tool {
				drop = i
				break
			}
		}
		c.words -= c.entries[drop].words
		c.entries = slices.Delete(c.entries, drop, drop+1) // zeroes the freed slot
	}
}

// messages returns a fresh slice of the full context, safe to keep.
func (c *convo) messages() []model.Message {
	out := make([]model.Message, 0, 1+len(c.entries))
	out = append(out, c.system.msg)
	for _, e := range c.entries {
		out = append(out, e.msg)
	}
	return out
}

// chatBody builds a streaming chat completion body from pre-encoded
// messages; rid, when set, goes in SGLang's rid field (plain ASCII: the
// planner's own ids).
func chatBody(modelJSON []byte, maxTokens int, rid string, room uint64, system *entry, entries []entry) []byte {
	n := 110 + len(modelJSON) + len(system.json) + len(rid)
	for _, e := range entries {
		n += len(e.json) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"model":`...)
	b = append(b, modelJSON...)
	if rid != "" {
		b = append(b, `,"rid":"`...)
		b = append(b, rid...)
		b = append(b, '"')
	}
	if room != 0 {
		b = append(b, `,"bootstrap_room":`...)
		b = strconv.AppendUint(b, room, 10)
	}
	b = append(b, `,"stream":true,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(maxTokens), 10)
	b = append(b, `,"messages":[`...)
	b = append(b, system.json...)
	for _, e := range entries {
		b = append(b, ',')
		b = append(b, e.json...)
	}
	return append(b, "]}"...)
}

// live runs one agent incarnation: sessions of turns until ctx ends (kill,
// kill-all or stop). It owns the goroutines of its sub-requests and returns
// only after they have ended.
func (s *Swarm) live(ctx context.Context, p *planner) {
	conv := convo{system: &s.system, max: s.opts.MaxContextWords}
	session := -1
	for {
		ds := p.next()
		if s.cfg.Trace != nil {
			for _, d := range ds {
				s.cfg.Trace(d)
			}
		}
		main := ds[0]
		if main.Session != session {
			conv.reset()
			session = main.Session
		}
		if main.Turn == 0 {
			conv.add(newEntry("user", text(main.PromptSeed, main.PromptWords), main.PromptWords, false))
		} else {
			conv.add(newEntry("user", "[tool output]\n"+text(main.PromptSeed, main.PromptWords),
				main.PromptWords, true))
		}

		var wg sync.WaitGroup
		for _, d := range ds[1:] {
			wg.Go(func() {
				task := []entry{newEntry("user", "[sub-task]\n"+text(d.PromptSeed, d.PromptWords), d.PromptWords, false)}
				msgs := []model.Message{s.system.msg, task[0].msg}
				s.caller.doRetrying(ctx, d, msgs, func(rid string) []byte { return chatBody(s.modelJSON, d.MaxTokens, rid, d.Room, &s.system, task) })
			})
		}
		entries := conv.entries
		o, answer := s.caller.doRetrying(ctx, main, conv.messages(),
			func(rid string) []byte {
				return chatBody(s.modelJSON, main.MaxTokens, rid, main.Room, &s.system, entries)
			})
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		if o.Kind == outcome.KindCompleted {
			conv.add(newEntry("assistant", answer, o.Tokens, false))
		}
		pause := main.Think
		if o.Kind == outcome.KindError {
			pause = max(pause, errorBackoff)
		}
		if !sleepCtx(ctx, pause) {
			return
		}
	}
}

// runAgent is the one goroutine of agent id: it runs incarnations, each with
// its own planner and kill timer, restarting after kills until ctx ends.
func (s *Swarm) runAgent(ctx context.Context, id int) {
	for inc := 0; ; inc++ {
		p := newPlanner(s.cfg.Seed, s.opts, id, inc)
		ictx, kill := context.WithCancelCause(ctx)
		s.setKill(id, kill)
		var timer *time.Timer
		if p.inc.KillAfter > 0 {
			timer = time.AfterFunc(p.inc.KillAfter, func() { kill(causeKill) })
		}
		s.live(ictx, p)
		if timer != nil {
			timer.Stop()
		}
		s.setKill(id, nil)
		cause := context.Cause(ictx)
		kill(nil)
		if ctx.Err() != nil {
			return
		}
		if cause == causeKill {
			s.counters.kills.Add(1)
		}
		if !sleepCtx(ctx, p.inc.RestartDelay) {
			return
		}
		s.counters.restarts.Add(1)
	}
}

// sleepCtx waits d unless ctx ends first; it reports whether to go on.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
