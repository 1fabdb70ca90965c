package agents

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Sink receives every Outcome exactly once. It is called concurrently from
// many goroutines and must not block for long (append under a mutex, or send
// to a buffered channel the recorder drains).
type Sink func(outcome.Outcome)

// CheckFunc checks a completed answer; a non-nil error is an integrity
// violation. Return a *MismatchError to have expected and got recorded.
type CheckFunc func(messages []model.Message, maxTokens int, got string) error

// MismatchError is an integrity violation with the exact expected answer.
type MismatchError struct {
	Expected, Got string
}

// Error reports where the answers first diverge, short enough for a log line.
func (e *MismatchError) Error() string {
	i := 0
	for i < len(e.Expected) && i < len(e.Got) && e.Expected[i] == e.Got[i] {
		i++
	}
	return fmt.Sprintf("answer differs from the model at byte %d (expected %d bytes, got %d)",
		i, len(e.Expected), len(e.Got))
}

// ModelCheck is the CheckFunc for the bundled engine: the answer must be
// exactly model.ExpectedChat (the engine always generates max_tokens tokens).
func ModelCheck(messages []model.Message, maxTokens int, got string) error {
	if want := model.ExpectedChat(messages, maxTokens); want != got {
		return &MismatchError{Expected: want, Got: got}
	}
	return nil
}

// applyCheck runs check on a completed outcome and records a violation.
func applyCheck(o *outcome.Outcome, check CheckFunc, msgs []model.Message, got string) {
	if check == nil || o.Kind != outcome.KindCompleted {
		return
	}
	if err := check(msgs, o.MaxTokens, got); err != nil {
		o.Integrity = err.Error()
		if me, ok := errors.AsType[*MismatchError](err); ok {
			o.Expected, o.Got = me.Expected, me.Got
		}
	}
}

// Counters are live totals for a progress display, updated with atomics and
// readable at any time from any goroutine.
type Counters struct {
	started, inFlight, completed            atomic.Int64
	cancelledQueued, cancelledDecode        atomic.Int64
	errors, hung, kills, killAlls, restarts atomic.Int64
	integrity                               atomic.Int64
}

// Stats is a consistent-enough copy of Counters (each field read atomically).
// Once a swarm has stopped, Started == Completed+Cancelled()+Errors+Hung.
type Stats struct {
	Started         int64 `json:"started"`
	InFlight        int64 `json:"in_flight"`
	Completed       int64 `json:"completed"`
	CancelledQueued int64 `json:"cancelled_queued"`
	CancelledDecode int64 `json:"cancelled_decode"`
	Errors          int64 `json:"errors"`
	Hung            int64 `json:"hung"`
	Kills           int64 `json:"kills"`
	KillAlls        int64 `json:"kill_alls"`
	Restarts        int64 `json:"restarts"`
	Integrity       int64 `json:"integrity_violations"`
}

// Cancelled is the number of cancelled requests in either phase.
func (s Stats) Cancelled() int64 { return s.CancelledQueued + s.CancelledDecode }

// Ended is the number of requests that have an outcome.
func (s Stats) Ended() int64 { return s.Completed + s.Cancelled() + s.Errors + s.Hung }

// Snapshot reads every counter.
func (c *Counters) Snapshot() Stats {
	return Stats{
		Started: c.started.Load(), InFlight: c.inFlight.Load(), Completed: c.completed.Load(),
		CancelledQueued: c.cancelledQueued.Load(), CancelledDecode: c.cancelledDecode.Load(),
		Errors: c.errors.Load(), Hung: c.hung.Load(), Kills: c.kills.Load(),
		KillAlls: c.killAlls.Load(), Restarts: c.restarts.Load(), Integrity: c.integrity.Load(),
	}
}

func (c *Counters) begin() {
	c.started.Add(1)
	c.inFlight.Add(1)
}

// end counts o; called exactly once per request, before the sink sees it.
func (c *Counters) end(o *outcome.Outcome) {
	switch o.Kind {
	case outcome.KindCompleted:
		c.completed.Add(1)
	case outcome.KindCancelled:
		if o.Phase == outcome.PhaseDecode {
			c.cancelledDecode.Add(1)
		} else {
			c.cancelledQueued.Add(1)
		}
	case outcome.KindError:
		c.errors.Add(1)
	case outcome.KindHung:
		c.hung.Add(1)
	}
	if o.Integrity != "" {
		c.integrity.Add(1)
	}
	c.inFlight.Add(-1)
}
