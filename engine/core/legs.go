package core

import (
	"encoding/json"

	"github.com/pdchaos/pdchaos/contract"
)

// Legs is the router's book on one request it sent to prefill and decode
// at once, as SGLang's model gateway keeps it: which leg a refusal, a
// failure or the client going away cancels, and whose answer the client
// gets. The live router and the simulator both drive it, so the decisions
// they make (and the probes they hit) are the same code; they only move
// the bytes. Not safe for concurrent use: the live router calls it under
// its own lock.
type Legs struct {
	probes *ProbeCounts
	// prefillOpen: prefill has not answered the router yet.
	prefillOpen bool
	// committed: decode's head (or its failure) reached the router first,
	// so decode's answer is the client's whatever prefill says.
	committed bool
	// refused: prefill's 4xx came first and is the client's answer.
	refused bool
	// over: the client's answer is written in full, or the client left.
	over bool
}

// LegAction is what the router must do after an event: cancel a leg
// (closing its connection is how a cancel reaches that engine).
type LegAction struct {
	CancelPrefill, CancelDecode bool
}

// NewLegs starts the book of one request whose two legs were just sent.
func NewLegs(probes *ProbeCounts) *Legs {
	return &Legs{probes: probes, prefillOpen: true}
}

// PrefillAnswered records prefill's answer to the router: its status, or 0
// when the request failed without one (connection lost, cancelled). A 4xx
// that comes before decode's head is a refusal: the client gets it, and
// decode's leg is cancelled, as the gateway fails on either head, rather
// than left to wait for KV no peer will send until its timeout. Only the
// first call counts: the leg answers once.
func (l *Legs) PrefillAnswered(status int) (refusal bool, a LegAction) {
	if !l.prefillOpen {
		return false, a
	}
	l.prefillOpen = false
	if status != 200 {
		l.probes.Hit(contract.ProbeRouterPrefillFailed)
	}
	if status >= 400 && status < 500 && !l.committed && !l.over {
		l.probes.Hit(contract.ProbeRouterPrefillRefused)
		l.refused = true
		return true, LegAction{CancelDecode: true}
	}
	return false, a
}

// DecodeAnswered records the head of decode's answer: its status, or 0
// when the request failed before one (a 502 for the client). It reports
// whether the client's answer is prefill's refusal instead (which came
// first; decode's answer is then dropped). A 4xx from decode cancels
// prefill's leg, which would otherwise hold its room until the bootstrap
// deadline. A failure after the client left is that cancel, not decode's
// failure. Only the first call counts.
func (l *Legs) DecodeAnswered(status int) (usePrefillRefusal bool, a LegAction) {
	if l.committed {
		return false, a
	}
	l.committed = true
	if l.refused {
		return true, a
	}
	switch {
	case status == 0 && !l.over:
		l.probes.Hit(contract.ProbeRouterDecodeFailed)
	case status >= 400 && status < 500:
		l.probes.Hit(contract.ProbeRouterDecodeRefused)
		a.CancelPrefill = true
	}
	return false, a
}

// DecodeError records an error from decode reaching the client: as the
// answer's status (inStream false) or as an error event in a stream that
// had started.
func (l *Legs) DecodeError(inStream bool) {
	if inStream {
		l.probes.Hit(contract.ProbeRouterUpstreamError)
	} else {
		l.probes.Hit(contract.ProbeRouterDecodeErrorStatus)
	}
}

// DecodeEvent is one event of decode's answer as SGLang's /generate
// writes it (a stream event, or the whole answer when the client did not
// stream): the text so far with its meta_info, or an error.
type DecodeEvent struct {
	contract.GenerateChunk
	Error *contract.ErrorDetail `json:"error"`
}

// Event reads one event of decode's answer. One that is not JSON is
// skipped (ok false) and the answer goes on from the next: a decode that
// is not ours, or a proxy between, may write one, and it must neither end
// the client's answer nor reach it. An error event is decode's error
// reaching the client in the stream (DecodeError).
func (l *Legs) Event(data []byte) (ev DecodeEvent, ok bool) {
	if ev, ok := parseEvent(data); ok {
		return ev, true // decode's own layout, read without reflection
	}
	if json.Unmarshal(data, &ev) != nil {
		l.probes.Hit(contract.ProbeRouterBadEvent)
		return DecodeEvent{}, false
	}
	if ev.Error != nil {
		l.DecodeError(true)
	}
	return ev, true
}

// StreamEnded records the end of decode's stream and reports whether it
// ended early: neither a finish reason nor an error event came, so the
// client must be told its answer broke off. A stream cut because the
// client left is that cancel, not an early end.
func (l *Legs) StreamEnded(finished, errored bool) (early bool) {
	if !finished && !errored && !l.over {
		l.probes.Hit(contract.ProbeRouterStreamEndedEarly)
		early = true
	}
	return early
}

// ClientGone records the client going away before its whole answer was
// written (midAnswer: part of it had been). Both legs are cancelled: the
// prefill request outlives a complete answer (prefill replies once its KV
// is sent), never a client that left.
func (l *Legs) ClientGone(midAnswer bool) (a LegAction) {
	if l.over {
		return a
	}
	l.over = true
	if l.prefillOpen {
		l.probes.Hit(contract.ProbeRouterClientLeftEarly)
		if midAnswer {
			l.probes.Hit(contract.ProbeRouterClientLeftMidAnswer)
		}
		a.CancelPrefill = true
	}
	a.CancelDecode = true
	return a
}

// Answered records the client's whole answer written. Decode's leg is
// done with; prefill's goes on until prefill answers.
func (l *Legs) Answered() LegAction {
	if l.over {
		return LegAction{}
	}
	l.over = true
	return LegAction{CancelDecode: true}
}
