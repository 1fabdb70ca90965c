package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
)

// request is one client request, from the client's and the router's view.
type request struct {
	id, agent, inc, session, turn, sub int
	probe                              bool
	rid                                string
	// clientRid is the rid the client sends (for a request it may retry,
	// retry); resent marks the retry itself.
	clientRid     string
	retry, resent bool
	// clientRoom, when not 0, is the bootstrap room the client sends (a
	// retry of the same room under retryRid, a new rid).
	clientRoom uint64
	retryRid   string
	retryDelay time.Duration // the pause before the retry
	// routeAsked is when decode's leg began to wait on a stopped
	// prefill's bootstrap server for its route (routeAsking).
	routeAsked  time.Duration
	routeAsking bool
	// abortReq: the planned cancel is an /abort_request to both engines;
	// abortSent says it went, at abortAt.
	abortReq, abortSent bool
	abortAt             time.Duration
	toP, toD, fromD     string // the router's connections for it (link#rid)
	room                uint64
	tokens              []model.Token
	gen, base           int // its agent's prompt generation; tokens[:base] is that prompt's start
	maxNew              int
	start, first        time.Duration
	got                 int
	answer              strings.Builder // what the router passed on to the client
	// decoded is decode's text so far, kept only once the router's view
	// of it was reset (forward); routerSaw is how much of it the router
	// has passed on.
	decoded      []byte
	routerSaw    int
	plan         outcome.CancelKind
	cancelAt     int // tokens before a decode-phase cancel
	ended        bool
	pLive, dLive bool       // still running on prefill / decode
	legs         *core.Legs // the router's book on its two legs
	onEnd        func()
}

type agentState struct {
	id, inc, session, turn, turns int
	context                       []model.Token
	prompt                        []model.Token // system prompt and context, built once and grown with the context; nil: rebuild
	promptGen                     int           // prompts built so far: a request's tokens start with prompt while it is its gen
	kv                            model.Digest  // the KV of prompt[:kvLen] digested, for promptSeed
	kvLen                         int
	inflight                      map[*request]bool
	// erred: the turn's request (or its retry) ended in an error, so the
	// next turn waits at least errorBackoff.
	erred bool
}

// errorBackoff is the agents' pause after a turn that ended in error (the
// live swarm's, agents.errorBackoff): an agent facing a dead endpoint does
// not spin.
const errorBackoff = 100 * time.Millisecond

// startClients schedules every agent's first turn and the kills.
func (s *run) startClients() {
	c := s.clients
	s.system = s.words(c.SystemPromptWords)
	s.systemKV = model.NewDigest().WriteTokens(s.system, 0)
	for i := range c.Agents {
		a := &agentState{id: i, inflight: map[*request]bool{}}
		s.agents = append(s.agents, a)
		start := time.Duration(0)
		if c.Agents > 1 {
			start = c.StartSpread * time.Duration(i) / time.Duration(c.Agents)
		}
		s.at(start, fmt.Sprintf("agent/%d", i), func() { s.newSession(a); s.turn(a) })
		if c.KillEvery > 0 {
			s.scheduleKill(a)
		}
	}
	for _, at := range c.KillAllAt {
		s.at(at, "clients", func() { s.killAll() })
	}
	if c.KillAllEvery > 0 {
		s.after(s.exp(c.KillAllEvery), "clients", s.killAllRepeat)
	}
}

func (s *run) exp(mean time.Duration) time.Duration {
	return time.Duration(-math.Log(1-s.rng.Float64()) * float64(mean))
}

func (s *run) words(n int) []model.Token {
	out := make([]model.Token, n)
	for i := range out {
		out[i] = model.Token(s.rng.Uint32())
	}
	return out
}

func (s *run) newSession(a *agentState) {
	a.session++
	a.turn = 0
	a.turns = 1 + s.rng.IntN(s.clients.TurnsPerSession)
	a.context = s.words(s.clients.UserPromptWords)
	a.prompt = nil
}

// turn sends one turn of agent a: a request, maybe with sub-requests.
func (s *run) turn(a *agentState) {
	if s.now >= s.loadEnd {
		return
	}
	c := s.clients
	inc := a.inc
	subs := 0
	if s.chance(c.SubRequestRate) {
		subs = 1 + s.rng.IntN(c.MaxSubRequests)
	}
	left := subs + 1
	if a.prompt == nil {
		a.prompt = append(append([]model.Token(nil), s.system...), a.context...)
		a.promptGen++
		a.kv, a.kvLen = s.systemKV, len(s.system)
	}
	for sub := 0; sub <= subs; sub++ {
		// Requests share the agent's prompt (no one writes a request's
		// tokens); capped, so an append copies.
		prompt := a.prompt[:len(a.prompt):len(a.prompt)]
		if sub > 0 {
			prompt = append(prompt, s.words(8)...)
		}
		req := s.newRequest(a, sub, prompt)
		req.gen, req.base = a.promptGen, len(a.prompt)
		a.inflight[req] = true
		req.onEnd = func() {
			delete(a.inflight, req)
			left--
			if left == 0 && a.inc == inc {
				pause := s.between(0, 2*c.ThinkTime)
				if a.erred {
					pause = max(pause, errorBackoff)
				}
				a.erred = false
				s.after(pause, fmt.Sprintf("agent/%d", a.id), func() {
					if a.inc == inc {
						s.nextTurn(a)
					}
				})
			}
		}
		s.send(req)
	}
}

func (s *run) nextTurn(a *agentState) {
	c := s.clients
	a.turn++
	if a.turn >= a.turns {
		s.newSession(a)
	} else {
		out := s.words(c.ToolOutputWords/2 + s.rng.IntN(c.ToolOutputWords/2+1))
		a.context = append(a.context, out...)
		if over := len(a.context) - c.MaxContextWords; over > 0 {
			a.context = a.context[over:]
			a.prompt = nil
		} else if a.prompt != nil {
			a.prompt = append(a.prompt, out...)
		}
	}
	s.turn(a)
}

func (s *run) newRequest(a *agentState, sub int, prompt []model.Token) *request {
	c := s.clients
	s.nreq++
	req := &request{id: s.nreq, agent: a.id, inc: a.inc, session: a.session, turn: a.turn, sub: sub, tokens: prompt}
	req.maxNew = c.MaxTokens/2 + s.rng.IntN(c.MaxTokens-c.MaxTokens/2+1)
	req.maxNew = max(req.maxNew, 1)
	switch r := s.rng.Float64(); {
	case r < c.CancelQueuedRate:
		req.plan = outcome.CancelQueued
		d := s.between(0, c.CancelQueuedDelay)
		s.after(d, "client", func() { s.cancel(req, outcome.ReasonCancel) })
	case r < c.CancelQueuedRate+c.CancelDecodeRate && req.maxNew >= 2:
		req.plan = outcome.CancelDecode
		req.cancelAt = 1 + s.rng.IntN(req.maxNew-1)
	case r < c.CancelQueuedRate+c.CancelDecodeRate+c.DeadlineRate:
		req.plan = outcome.CancelDeadline
		s.after(s.between(c.Deadline/2, c.Deadline), "client", func() { s.cancel(req, outcome.ReasonDeadline) })
	}
	// Drawn only when asked for, so other scenarios' seeds replay as before.
	if req.plan == outcome.CancelQueued && c.RetrySameRidRate > 0 && s.rng.Float64() < c.RetrySameRidRate {
		req.retry, req.clientRid = true, fmt.Sprintf("pdchaos-%x", s.rng.Uint64())
	}
	if req.plan == outcome.CancelQueued && !req.retry && c.RetrySameRoomRate > 0 && s.rng.Float64() < c.RetrySameRoomRate {
		req.retry, req.clientRoom = true, s.rng.Uint64()>>1+1
		req.clientRid, req.retryRid = fmt.Sprintf("pdchaos-room-%016x-0", req.clientRoom), fmt.Sprintf("pdchaos-room-%016x-1", req.clientRoom)
	}
	if req.retry && c.RetryDelay > 0 {
		req.retryDelay = s.between(0, c.RetryDelay)
	}
	if (req.plan == outcome.CancelQueued || req.plan == outcome.CancelDecode) && !req.retry && c.AbortRequestRate > 0 && s.rng.Float64() < c.AbortRequestRate {
		req.abortReq, req.clientRid = true, fmt.Sprintf("pdchaos-abort-%016x", s.rng.Uint64())
	}
	return req
}

// resend is a client's retry of req, cancelled before its first token:
// the same prompt and rid, not cancelled. The turn waits for it:
// req's onEnd moves to the retry.
func (s *run) resend(req *request, onEnd func()) {
	s.nreq++
	r := &request{id: s.nreq, agent: req.agent, inc: req.inc, session: req.session, turn: req.turn, sub: req.sub, tokens: req.tokens,
		gen: req.gen, base: req.base, maxNew: req.maxNew, clientRid: req.clientRid, clientRoom: req.clientRoom, resent: true}
	if req.retryRid != "" {
		r.clientRid = req.retryRid
	}
	if req.agent >= 0 && req.agent < len(s.agents) {
		a := s.agents[req.agent]
		a.inflight[r] = true
		r.onEnd = func() {
			delete(a.inflight, r)
			onEnd()
		}
	}
	s.send(r)
}

// send is the router: a room, then the same request to prefill and decode.
func (s *run) send(req *request) {
	req.room = s.rng.Uint64()>>1 + 1
	if req.clientRoom != 0 {
		req.room = req.clientRoom
	}
	req.rid = fmt.Sprintf("gen-%016x", req.room)
	if req.clientRid != "" {
		req.rid = req.clientRid
	}
	req.toP, req.toD, req.fromD = contract.LinkRouterPrefill+"#"+req.rid, contract.LinkRouterDecode+"#"+req.rid, contract.LinkRouterDecode+"#"+req.rid+"<"
	req.start = s.now
	req.pLive, req.dLive = true, true
	req.legs = core.NewLegs(s.rprobes)
	s.tracef("router", "send rid=%s room=%d agent=%d tokens=%d max=%d plan=%q", req.rid, req.room, req.agent, len(req.tokens), req.maxNew, req.plan)
	desc := s.describe("generate ", req.rid)
	s.transmit(req.toP, &msg{kind: "http", room: req.room, desc: desc, deliver: func() { s.prefillGenerate(req) }})
	s.transmit(req.toD, &msg{kind: "http", room: req.room, desc: desc, deliver: func() { s.decodeGenerate(req) }})
	hang := s.clients.HangTimeout
	if req.probe {
		hang = s.checks.ProbeDeadline
	}
	s.after(hang, "client", func() {
		if !req.ended {
			s.end(req, outcome.Outcome{Kind: outcome.KindHung, Phase: phaseOf(req)})
			s.closeUpstream(req)
		}
	})
}

func phaseOf(req *request) outcome.Phase {
	if req.got > 0 {
		return outcome.PhaseDecode
	}
	return outcome.PhaseQueued
}

func (s *run) prefillGenerate(req *request) {
	if !req.pLive {
		return
	}
	if s.pDown {
		req.pLive = false
		s.transmit(req.toP+"<", &msg{kind: "http", room: req.room, desc: s.describe("connection refused ", req.rid), deliver: func() {
			req.legs.PrefillAnswered(0) // no answer: decode's leg goes on
		}})
		return
	}
	if err := s.p.Add(s.wall(), req.rid, req.room, req.tokens); err != nil {
		s.tracef("prefill/http", "generate rid=%s: %v", req.rid, err)
		req.pLive = false
		refusal := err.Error()
		s.transmit(req.toP+"<", &msg{kind: "http", room: req.room, desc: s.describe("error 400 ", req.rid), deliver: func() {
			refused, a := req.legs.PrefillAnswered(400)
			if !refused {
				return // decode answered first (its answer is the client's), or the client left
			}
			// The router cancels decode's leg, whose request then fails in
			// the router at once, and core.Legs says whose answer the
			// client gets, as the live router's dispatch asks it.
			if usePrefill, _ := req.legs.DecodeAnswered(0); usePrefill {
				s.end(req, outcome.Outcome{Kind: outcome.KindError, Status: 400, Message: refusal})
			} else {
				s.end(req, outcome.Outcome{Kind: outcome.KindError, Status: 502, Message: "decode: context canceled"})
			}
			if a.CancelDecode {
				s.closeDecode(req)
			}
		}})
		return
	}
	s.pwait[req.rid] = req
	s.kick(&s.pSched)
}

func (s *run) decodeGenerate(req *request) {
	if !req.dLive {
		return
	}
	if s.dDown {
		req.dLive = false
		s.toClient(req, "connection refused", func() { s.decodeLegLost(req, "connection refused (decode killed)") })
		return
	}
	why := "connection refused (prefill killed)"
	if !s.routed && !s.pDown && s.frozen("prefill") {
		// Decode resolves prefill's route on its bootstrap server: a
		// stopped process answers once it continues, if the lookup has
		// not given up by then.
		if !req.routeAsking {
			req.routeAsking, req.routeAsked = true, s.now
		}
		if s.now-req.routeAsked < contract.RouteLookupTimeout {
			s.untilContinues("prefill", req.routeAsked+contract.RouteLookupTimeout, "decode/route", func() { s.decodeGenerate(req) })
			return
		}
		why = "timed out (prefill stopped)"
	}
	if !s.routed && (s.pDown || req.routeAsking && s.frozen("prefill")) {
		// The server died with the process, or the lookup timed out on
		// a stopped one: the request fails with a 502.
		s.dprobes.Hit(contract.ProbeDecodeRouteFailed)
		req.dLive = false
		s.toClient(req, "error 502", func() {
			if usePrefill, _ := req.legs.DecodeAnswered(502); usePrefill {
				return
			}
			s.onError(req, 502, "bootstrap route "+bootstrapAddr+": "+why)
		})
		return
	}
	if !s.routed {
		s.routed = true
		for _, p := range s.ctlPush { // a route resolved afresh: new connections, hello first
			p.connected = false
		}
	}
	if err := s.d.Add(s.wall(), req.rid, req.room, bootstrapAddr, req.tokens, req.maxNew); err != nil {
		req.dLive = false
		msg := err.Error()
		s.toClient(req, "error 400", func() {
			usePrefill, a := req.legs.DecodeAnswered(400)
			if usePrefill {
				return // prefill's refusal came first and was the answer
			}
			s.onError(req, 400, msg)
			if a.CancelPrefill {
				s.closePrefill(req)
			}
		})
		return
	}
	s.streams[req.rid] = req
	s.kick(&s.dSched)
}

// toClient carries something from decode back through the router.
func (s *run) toClient(req *request, what string, fn func()) {
	s.transmit(req.fromD, &msg{kind: "http", room: req.room, desc: s.describe(what+" ", req.rid), deliver: fn})
}

func (s *run) onToken(req *request, piece string, done bool) {
	if req.ended {
		return
	}
	if req.got == 0 {
		req.first = s.now
		req.legs.DecodeAnswered(200)
	}
	if req.got == 1 && s.strangeEventFor(req) && !s.strangeEvent(req) {
		return
	}
	req.got++
	req.forward(piece)
	if done {
		s.complete(req)
		return
	}
	if req.plan == outcome.CancelDecode && req.got == req.cancelAt {
		s.cancel(req, outcome.ReasonCancel)
	}
}

// forward is the router passing a token of decode's answer on to the
// client, as the live router does: decode's events carry the whole text so
// far, and the router sends the part past what it saw last. Normally that
// is the piece; after an event the router took for text with none (see
// strangeEvent) it is everything again.
func (req *request) forward(piece string) {
	if req.decoded == nil {
		req.answer.WriteString(piece)
		return
	}
	req.decoded = append(req.decoded, piece...)
	req.answer.Write(req.decoded[min(req.routerSaw, len(req.decoded)):])
	req.routerSaw = len(req.decoded)
}

// complete ends req as the client's whole answer: what the router passed
// on, judged against the model's answer. The router writes the finish
// reason "length" (the model always runs to max_tokens).
func (s *run) complete(req *request) {
	o := outcome.Outcome{Kind: outcome.KindCompleted, FinishReason: "length"}
	// The expected answer is computed only for answers that complete:
	// digesting the prompt's KV is most of a request's cost.
	want := model.Generate(s.promptSeed(req), req.maxNew)
	if got := req.answer.String(); got != want {
		o.Integrity = "answer differs from the model's"
		o.Expected, o.Got = want, got
	}
	s.end(req, o)
}

// promptSeed is model.Seed(model.PromptKV(req.tokens)), with the shared
// system prompt's part digested once per run and an agent's prompt's part
// carried from one of its requests to the next.
func (s *run) promptSeed(req *request) uint64 {
	tokens := req.tokens
	if req.agent >= 0 && req.agent < len(s.agents) {
		// The agent's prompt only grows within a generation: its digest is
		// carried forward to this request's start and finished from there.
		if a := s.agents[req.agent]; a.prompt != nil && a.promptGen == req.gen && a.kvLen <= req.base && req.base <= len(a.prompt) {
			a.kv, a.kvLen = a.kv.WriteTokens(a.prompt[a.kvLen:req.base], a.kvLen), req.base
			return a.kv.WriteTokens(tokens[req.base:], req.base).Seed()
		}
	}
	n := len(s.system)
	if n > 0 && len(tokens) >= n && slices.Equal(tokens[:n], s.system) {
		return s.systemKV.WriteTokens(tokens[n:], n).Seed()
	}
	return model.NewDigest().WriteTokens(tokens, 0).Seed()
}

func (s *run) onError(req *request, status int, message string) {
	// Decode's error reaches the router as a status before any token, or
	// as an error event in a stream already started.
	req.legs.DecodeError(req.got > 0)
	if !req.ended {
		s.end(req, outcome.Outcome{Kind: outcome.KindError, Status: status, Message: message})
	}
}

// cancel is the client going away: its outcome, then the router closes
// both upstream requests.
func (s *run) cancel(req *request, why outcome.Reason) {
	if req.ended {
		return
	}
	if req.abortReq && why == outcome.ReasonCancel {
		s.abortRequest(req)
		return
	}
	retry := req.retry && why == outcome.ReasonCancel && req.got == 0 && s.now < s.loadEnd
	onEnd := req.onEnd
	if retry {
		req.onEnd = nil // the turn goes on when the retry ends
	}
	s.end(req, outcome.Outcome{Kind: outcome.KindCancelled, Phase: phaseOf(req), Reason: why})
	s.closeUpstream(req)
	if retry {
		again := func() {
			s.resend(req, func() {
				if onEnd != nil {
					onEnd()
				}
			})
		}
		if req.retryDelay > 0 {
			s.after(req.retryDelay, "client", func() {
				// An agent killed while it backed off never sends it, nor
				// does a swarm stopped at the load's end (stopClients).
				if s.now >= s.loadEnd || req.agent >= 0 && req.agent < len(s.agents) && s.agents[req.agent].inc != req.inc {
					return
				}
				again()
			})
		} else {
			again()
		}
	}
}

// abortRequest is the client's POST /abort_request {"rid"} to prefill and
// to decode, each on its own connection, the answer read on: the request
// ends when decode ends it (end turns that into the cancel's outcome).
func (s *run) abortRequest(req *request) {
	if req.abortSent {
		return
	}
	req.abortSent, req.abortAt = true, s.now
	s.tracef("client", "abort_request rid=%s room=%d tokens=%d", req.rid, req.room, req.got)
	desc := s.describe("abort_request ", req.rid)
	s.transmit(linkAbortPrefill+"#"+req.rid, &msg{kind: "http", room: req.room, desc: desc, deliver: func() {
		if s.pDown {
			return // refused: the request it names died with the process
		}
		s.p.OnAbortRequest(s.wall(), req.rid)
		s.kick(&s.pSched)
	}})
	s.transmit(linkAbortDecode+"#"+req.rid, &msg{kind: "http", room: req.room, desc: desc, deliver: func() {
		if s.dDown {
			return // refused: the request it names died with the process
		}
		s.d.OnAbortRequest(s.wall(), req.rid)
		s.kick(&s.dSched)
	}})
}

// The client's own connections to the engines' HTTP servers, for
// /abort_request: no router between, and no fault link of the scenarios.
const (
	linkAbortPrefill = "client-prefill"
	linkAbortDecode  = "client-decode"
)

// closeUpstream is the router seeing its client gone: Legs says which legs
// it closes.
func (s *run) closeUpstream(req *request) {
	a := req.legs.ClientGone(req.got > 0)
	if a.CancelPrefill {
		// The router's prefill request ends with the cancel (no answer),
		// unless prefill had answered already.
		req.legs.PrefillAnswered(0)
		s.closePrefill(req)
	}
	if a.CancelDecode {
		req.legs.DecodeAnswered(0)
		s.closeDecode(req)
	}
}

// closePrefill is the router closing prefill's leg of req.
func (s *run) closePrefill(req *request) {
	s.transmit(req.toP, &msg{kind: "http", room: req.room, desc: s.describe("close ", req.rid), deliver: func() {
		if !req.pLive {
			s.tracef("prefill/http", "close rid=%s: prefill already answered", req.rid)
			return
		}
		req.pLive = false
		delete(s.pwait, req.rid)
		s.tracef("prefill/http", "client gone rid=%s: abort", req.rid)
		s.p.OnClientGone(s.wall(), req.room, req.rid)
		s.kick(&s.pSched)
	}})
}

// closeDecode is the router closing decode's leg of req.
func (s *run) closeDecode(req *request) {
	s.transmit(req.toD, &msg{kind: "http", room: req.room, desc: s.describe("close ", req.rid), deliver: func() {
		if !req.dLive {
			return
		}
		req.dLive = false
		delete(s.streams, req.rid)
		if s.dDown {
			return
		}
		s.tracef("decode/http", "client gone rid=%s: abort", req.rid)
		s.d.OnClientGone(s.wall(), req.rid)
		s.kick(&s.dSched)
	}})
}

// end records the request's one outcome.
func (s *run) end(req *request, o outcome.Outcome) {
	req.ended = true
	if req.legs != nil && (o.Kind == outcome.KindCompleted || o.Kind == outcome.KindError) {
		req.legs.Answered() // decode's leg is over: nothing left to close
	}
	if req.abortSent && (o.Kind == outcome.KindCompleted || o.Kind == outcome.KindError) {
		// The answer read on after the client's abort_request: that
		// cancel's outcome, however the answer ended.
		o.AnswerAfterAbort = outcome.AnswerError
		if o.Kind == outcome.KindCompleted {
			o.AnswerAfterAbort = outcome.AnswerCompleted
		}
		o.Kind, o.Reason, o.AbortSent, o.Phase = outcome.KindCancelled, outcome.ReasonAbortRequest, req.abortAt, outcome.PhaseQueued
		if req.got > 0 && req.first < req.abortAt {
			o.Phase = outcome.PhaseDecode
		}
		o.Failure = ""
		if o.AnswerAfterAbort == outcome.AnswerError {
			o.Failure = outcome.FailureHTTP
			if req.got > 0 {
				o.Failure = outcome.FailureErrorEvent
			}
		}
	}
	if o.Kind == outcome.KindError && req.sub == 0 && !req.probe && req.agent >= 0 && req.agent < len(s.agents) {
		s.agents[req.agent].erred = true
	}
	o.Source, o.Agent, o.Incarnation, o.Session, o.Turn, o.Sub = outcome.SourceAgent, req.agent, req.inc, req.session, req.turn, req.sub
	o.Start, o.End, o.Tokens, o.MaxTokens, o.Planned = req.start, s.now, req.got, req.maxNew, req.plan
	o.Room, o.HasRoom, o.Rid, o.Retry = req.room, true, req.clientRid, req.resent
	if req.got > 0 {
		o.TTFT = req.first - req.start
	}
	s.tracef("client", "%s rid=%s room=%d tokens=%d %s%s", o.Kind, req.rid, req.room, req.got, o.Reason, o.Message)
	if req.probe {
		s.probeDone(req, o)
	} else {
		s.outcomes = append(s.outcomes, o)
	}
	if req.onEnd != nil {
		req.onEnd()
	}
}

func (s *run) scheduleKill(a *agentState) {
	s.after(s.exp(s.clients.KillEvery), fmt.Sprintf("agent/%d", a.id), func() {
		if s.now >= s.loadEnd {
			return
		}
		s.kill(a, outcome.ReasonKill)
		s.scheduleKill(a)
	})
}

// kill drops every request of a and restarts it with a fresh session.
func (s *run) kill(a *agentState, why outcome.Reason) {
	a.inc++
	s.tracef(fmt.Sprintf("agent/%d", a.id), "KILL (%s)", why)
	for _, req := range s.sorted(a.inflight) {
		s.cancel(req, why)
	}
	inc := a.inc
	s.after(s.between(0, s.clients.RestartDelay), fmt.Sprintf("agent/%d", a.id), func() {
		if a.inc == inc {
			s.newSession(a)
			s.turn(a)
		}
	})
}

func (s *run) killAll() {
	if s.now >= s.loadEnd {
		return
	}
	for _, a := range s.agents {
		s.kill(a, outcome.ReasonKillAll)
	}
}

func (s *run) killAllRepeat() {
	s.killAll()
	if s.now < s.loadEnd {
		s.after(s.exp(s.clients.KillAllEvery), "clients", s.killAllRepeat)
	}
}

// sorted lists a set of requests in id order: map order is random and
// would break replay.
func (s *run) sorted(m map[*request]bool) []*request {
	out := make([]*request, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].id < out[j-1].id; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
