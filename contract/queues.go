package contract

import "slices"

// QueueRoom is what one held room's record says about the queues it can
// be in: facts read from its events and its ranks' statuses, never from
// the queues themselves, so a queue gauge can be judged against them.
type QueueRoom struct {
	// Requested: a request opened or joined the room (the status event or
	// RoomEventRequest note naming its rid). A record a stray notice or an
	// early TransferInfo opened has none and is in no queue.
	Requested bool `json:"requested,omitempty"`
	// MetadataSent and Committed are decode's RoomEventMetadataSent (pages
	// allocated, metadata on its way: the room left the prealloc queue)
	// and RoomEventCommitted (KV taken as complete: it left the transfer
	// queue for the running batch).
	MetadataSent bool `json:"metadata_sent,omitempty"`
	Committed    bool `json:"committed,omitempty"`
	// Failed, Bootstrapping and Started are over all the room's ranks:
	// some rank's status Failed, some rank's Bootstrapping, some rank's
	// Transferring or Success (a KV write started).
	Failed        bool `json:"failed,omitempty"`
	Bootstrapping bool `json:"bootstrapping,omitempty"`
	Started       bool `json:"started,omitempty"`
	// Unknown: the record's events were capped (MaxRoomEvents), so an
	// event it lacks may have happened. Such a room may be in any queue
	// and is certainly in none.
	Unknown bool `json:"unknown,omitempty"`
}

// QueueRule says which held rooms one of the engine's queue gauges counts,
// as two predicates: the rooms that must be in the queue and those that
// may be. At one instant the gauge lies between the two counts; one
// outside them reads another queue, lost a room or kept one (a request
// lingering after its room ended, or a room held with no queue holding
// its request: the silent wedge from the inside). Two predicates, not one,
// because a room whose status just changed stays where it was until the
// scheduler's next step moves it.
type QueueRule struct {
	Side string
	// Gauges are summed: a rule can bound a side's queues together where
	// the record cannot tell which of them holds a room.
	Gauges []string
	// PerRank: each rank's gauge counts that rank's queue, and only rooms
	// the rank holds count; otherwise every rank reports the side's
	// queue and every held room counts.
	PerRank   bool
	Must, May func(QueueRoom) bool
	Why       string
}

// QueueRules is the table of queue gauges and the rooms each holds, for
// the bundled engine (whose records carry the events; SGLang exports no
// room records).
func QueueRules() []QueueRule {
	return []QueueRule{
		{Side: SideDecode, Gauges: []string{MetricDecodePreallocQueue}, PerRank: true,
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && !r.MetadataSent && !r.Committed && !r.Failed },
			May:  func(r QueueRoom) bool { return r.Unknown || r.Requested && !r.MetadataSent && !r.Committed },
			Why:  "a request waits for pages from its arrival until its metadata is sent; a room failed while it waits moves on at the next step"},
		{Side: SideDecode, Gauges: []string{MetricDecodeTransferQueue}, PerRank: true,
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && r.MetadataSent && !r.Committed && !r.Failed },
			May: func(r QueueRoom) bool {
				return r.Unknown || r.Requested && !r.Committed && (r.MetadataSent || r.Failed)
			},
			Why: "from its metadata until its KV is committed or its room failed (a room failed before its pages moves here without metadata)"},
		{Side: SideDecode, Gauges: []string{MetricRunning},
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && r.Committed && !r.Failed },
			May:  func(r QueueRoom) bool { return r.Unknown || r.Requested && r.Committed },
			Why:  "decoding from its commit until its last token, which releases the room, or its abort"},
		{Side: SidePrefill, Gauges: []string{MetricPrefillBootstrapQueue},
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && r.Bootstrapping && !r.Failed },
			May:  func(r QueueRoom) bool { return r.Unknown || r.Requested && (r.Bootstrapping || !r.Started) },
			Why:  "from the request until every rank has decode's TransferInfo, or the room fails"},
		{Side: SidePrefill, Gauges: []string{MetricPrefillInflightQueue},
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && r.Started && !r.Bootstrapping && !r.Failed },
			May:  func(r QueueRoom) bool { return r.Unknown || r.Requested && !r.Bootstrapping },
			Why:  "from the forward (no rank bootstrapping any more) until every rank's transfer ended"},
		{Side: SidePrefill, Gauges: []string{MetricPrefillBootstrapQueue, MetricQueue, MetricPrefillInflightQueue},
			Must: func(r QueueRoom) bool { return known(r) && r.Requested && !r.Failed },
			May:  func(r QueueRoom) bool { return r.Unknown || r.Requested },
			Why:  "a request is in one of prefill's three queues from its arrival until its room ends, which clears it"},
	}
}

func known(r QueueRoom) bool { return !r.Unknown }

// QueueRoomOf reads a held record's facts (its events and every rank's
// status).
func QueueRoomOf(rec RoomRecord) QueueRoom {
	q := QueueRoom{Unknown: len(rec.Events) >= MaxRoomEvents}
	for _, e := range rec.Events {
		switch {
		case e.Kind == RoomEventMetadataSent:
			q.MetadataSent = true
		case e.Kind == RoomEventCommitted:
			q.Committed = true
		case e.Kind == RoomEventStatus || e.Kind == RoomEventRequest:
			if _, ok := CreatedRid(e.Detail); ok {
				q.Requested = true
			}
		}
	}
	for _, s := range rec.Ranks {
		switch s {
		case StateFailed:
			q.Failed = true
		case StateBootstrapping:
			q.Bootstrapping = true
		case StateTransferring, StateSuccess:
			q.Started = true
		}
	}
	return q
}

// QueueGaugesJudged lists every gauge some QueueRule bounds.
func QueueGaugesJudged() []string {
	var out []string
	for _, r := range QueueRules() {
		for _, g := range r.Gauges {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}
