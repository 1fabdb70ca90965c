package sim

import (
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
)

// strangerEvery is the mean pause between two of a stranger's messages.
const strangerEvery = 10 * time.Millisecond

// startStrangers starts the peer Config.Strangers asks for: until the
// load ends, about every strangerEvery it sends one message no engine of
// ours sends, as internal/testkit/hostilepeer does live. Its messages
// reach decode on connections of their own, so no link fault touches them.
func (s *run) startStrangers() {
	var next func()
	first := true
	next = func() {
		if s.now >= s.loadEnd {
			return
		}
		if first {
			first = false
			s.strangeOpening()
		}
		s.stranger()
		s.after(s.exp(strangerEvery), "stranger", next)
	}
	s.after(s.exp(strangerEvery), "stranger", next)
}

// stranger sends one message: a status notice in a state no prefill sends
// (decode ignores it) for a room decode does not hold; or, on Mooncake,
// where a stranger can address decode's own buffers (the session and base
// address are the process's, not per peer as NIXL's agent names), a chunk
// one token longer than its single page, that page past the pool (nothing
// lands), or an empty chunk for a room decode holds committed (refused as
// stray; the room's own chunks are all in).
func (s *run) stranger() {
	if s.dDown || s.frozen("decode") {
		return
	}
	kinds := 1
	if s.cfg.Wire == contract.WireMooncake {
		kinds = 3
	}
	room := s.rng.Uint64() >> 1
	switch s.rng.IntN(kinds) {
	case 0:
		st := []core.KVPoll{core.WaitingForInput, core.Transferring}[s.rng.IntN(2)]
		n := s.notify[0]
		n.frames = append(n.frames, s.wire.Status(room, st, 0, "stranger"))
		n.conns = append(n.conns, 0)
		s.tracef("stranger", "status %v for room %d to decode", st, room)
		s.kick(&n.actor)
	case 1:
		per := model.KVBytesPerToken / s.cfg.TP
		s.strangeChunk(room, []uint32{math.MaxUint32}, make([]byte, (s.cfg.PageSize+1)*per))
	default:
		for _, r := range s.dh.Held() {
			if s.d.Committed(r.Room) {
				s.strangeChunk(r.Room, nil, nil)
				return
			}
		}
	}
}

// strangeOpening is what a stranger sends once, at its first turn, as the
// gate's hostile peers do live: route lookups for a prefill rank that does
// not exist, a KV message for another rank, one cut off mid-frame, a
// chunk that is not whole tokens, and a chunk for a room decode does not
// hold on a connection the stranger resets before the write's completion
// comes back. Decode refuses each
// before anything is written. It draws nothing, so the rest of the run is
// what it would be without it.
func (s *run) strangeOpening() {
	if !s.dDown && !s.frozen("decode") {
		now := s.wall()
		room := uint64(1)<<62 | s.seed&0xffff // no room the router draws is held twice; this one decode never saw
		s.d.AdmitKVRank(now, 0, s.cfg.TP, room)
		s.tracef("stranger", "kv message for rank %d on rank 0's listener", s.cfg.TP)
		s.d.OnKVUnreadable(now, 0, 0, "read kv message: unexpected EOF (the stranger cut it mid-frame)")
		s.tracef("stranger", "kv message cut mid-frame")
		a := s.d.Config().Agents[0]
		agent := "stranger" // NIXL: a name decode never gave out
		if s.cfg.Wire == contract.WireMooncake {
			agent = s.wire.KVTarget(a.Name, a.KVBase) // Mooncake: decode's own buffers
		}
		if per := model.KVBytesPerToken / s.cfg.TP; per > 1 && s.d.AdmitKV(now, 0, room, 0, agent) {
			s.d.OnChunk(now, 0, room, 0, false, []uint32{math.MaxUint32}, 0, make([]byte, per+1)) // not whole tokens: refused before any write
			s.tracef("stranger", "chunk of %d bytes, tokens of %d, for room %d", per+1, per, room)
		}
		if s.d.AdmitKV(now, 0, room, 0, agent) {
			s.d.OnChunk(now, 0, room, 0, false, nil, 0, nil)
		}
		s.d.OnKVReplyFailed(now, 0, room)
		s.tracef("stranger", "chunk for room %d, connection reset before its completion", room)
		s.kick(&s.dSched)
	}
	s.strangeRoutes()
}

// strangeRoutes asks prefill's bootstrap server, once in each SGLang
// era's query, for a rank past its last (a decode set up for another TP
// size, or a peer that is not decode): prefill refuses each (core's
// RouteRank).
func (s *run) strangeRoutes() {
	if s.pDown || s.frozen("prefill") {
		return
	}
	for _, d := range contract.RouteDialects() {
		q, err := contract.ParseRouteQuery(mustQuery(d.Query(contract.RouteRank{TP: s.cfg.TP})))
		if err != nil {
			panic(fmt.Sprintf("sim: the %s route query does not parse: %v", d.Name, err))
		}
		rank, ok := s.p.RouteRank(q)
		s.tracef("stranger", "route lookup (%s) for prefill rank %d: found %v", d.Name, s.cfg.TP, ok)
		if ok && rank >= s.cfg.TP {
			// The runtime answers with that rank's control socket, an
			// index past its last: its handler panics and the hostile
			// peer's lookup fails, as the gate's hostile spec checks live.
			panic(fmt.Sprintf("sim: prefill answered a route lookup for rank %d of its %d", rank, s.cfg.TP))
		}
	}
}

func mustQuery(raw string) url.Values {
	q, err := url.ParseQuery(raw)
	if err != nil {
		panic(fmt.Sprintf("sim: route query %q: %v", raw, err))
	}
	return q
}

// strangeChunk lands a stranger's chunk on decode's rank 0, addressed to
// decode's own buffers, as the KV listener takes one.
func (s *run) strangeChunk(room uint64, pages []uint32, payload []byte) {
	now := s.wall()
	a := s.d.Config().Agents[0]
	if s.d.AdmitKV(now, 0, room, 0, s.wire.KVTarget(a.Name, a.KVBase)) {
		s.d.OnChunk(now, 0, room, 0, false, pages, 0, payload)
	}
	s.tracef("stranger", "chunk for room %d (%d pages, %d bytes) to decode", room, len(pages), len(payload))
	s.kick(&s.dSched)
}

// strangeEventsOneIn is how rarely, with a stranger on, an answer carries
// an event that is not JSON (about one answer in this many).
const strangeEventsOneIn = 32

// strangeEventFor says whether req's answer carries a stranger's event: a
// decode that is not ours, or a proxy between it and the router, writes
// one that is not JSON into the stream (the gate's hostile decode does).
// It is a hash of the seed and the request, not a draw from the run's
// source, so the rest of the run is what it would be without it.
func (s *run) strangeEventFor(req *request) bool {
	if !s.strangers {
		return false
	}
	h := (s.seed ^ uint64(req.id)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	return (h>>32)%strangeEventsOneIn == 0
}

// strangeEvent passes the stranger's event through the router's judge of
// decode's answer (core.Legs.Event), as the live router reads its stream,
// and does what the router does with it: nothing for one skipped; an error
// ends the client's answer. A text event would carry the whole text so
// far, which this one has none of, so it passes nothing on. It reports
// whether the answer goes on.
func (s *run) strangeEvent(req *request) bool {
	ev, ok := req.legs.Event([]byte("event: not json at all"))
	s.tracef("stranger", "an event that is not JSON in the answer of %s (skipped: %v)", req.rid, !ok)
	if ok && ev.Error != nil {
		s.onError(req, 500, ev.Error.Message)
		s.closeUpstream(req)
		return false
	}
	if ok {
		// Taken as a text event with no text: the router's text so far
		// is now empty, so decode's next event is passed on whole.
		if req.decoded == nil {
			req.decoded = []byte(req.answer.String())
		}
		req.routerSaw = 0
	}
	return true
}
