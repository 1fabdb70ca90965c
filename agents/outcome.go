package agents

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/engine/model"
)

// Kind is how a request ended. Every request gets exactly one.
type Kind string

// The four request endings. Hung is a finding about the target (no end by
// the hang deadline), distinct from a client-side cancel; its Phase tells a
// request that never got a token (queued) from one that stalled mid-decode.
const (
	KindCompleted Kind = "completed"
	KindCancelled Kind = "cancelled"
	KindError     Kind = "error"
	KindHung      Kind = "hung"
)

// Phase is where a request was when it was cancelled or found hung; it tells
// which engine path the abort exercised.
type Phase string

// Phases: queued means no content token had arrived (queued, bootstrapping,
// prefilling or transferring); decode means at least one token had.
const (
	PhaseQueued Phase = "queued"
	PhaseDecode Phase = "decode"
)

// Reason is why a request was cancelled.
type Reason string

// Cancellation reasons. Stop is the swarm's own shutdown, kept apart so that
// checks can ignore it.
const (
	ReasonCancel   Reason = "cancel"
	ReasonDeadline Reason = "deadline"
	ReasonKill     Reason = "kill"
	ReasonKillAll  Reason = "kill-all"
	ReasonStop     Reason = "stop"
)

// Source tells agent requests from open-loop requests in one outcome stream.
type Source string

// Request sources.
const (
	SourceAgent    Source = "agent"
	SourceOpenLoop Source = "openloop"
)

// Outcome is the one record of one request, as the harness stores it in
// events.jsonl and checks it. Times are offsets from the run's base time on
// the monotonic clock, comparable with fault windows.
type Outcome struct {
	Kind   Kind   `json:"kind"`
	Source Source `json:"source"`
	// Agent, Incarnation, Session, Turn and Sub identify an agent request
	// (Sub 0 is the main request of a turn, Sub > 0 a parallel sub-request).
	// For open-loop requests Agent is -1 and Turn is the request sequence.
	Agent       int `json:"agent"`
	Incarnation int `json:"incarnation"`
	Session     int `json:"session"`
	Turn        int `json:"turn"`
	Sub         int `json:"sub,omitempty"`

	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// TTFT is the time from send to the first content token (0 if none).
	TTFT time.Duration `json:"ttft,omitempty"`
	// ITL is the mean inter-token latency and MaxITL the largest gap.
	ITL    time.Duration `json:"itl,omitempty"`
	MaxITL time.Duration `json:"max_itl,omitempty"`
	// Tokens counts content deltas received.
	Tokens    int `json:"tokens"`
	MaxTokens int `json:"max_tokens"`
	// FinishReason is the final chunk's finish_reason on completion.
	FinishReason string `json:"finish_reason,omitempty"`

	// Phase and Reason are set for cancelled and hung requests.
	Phase  Phase  `json:"phase,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	// Planned is the cancel the agent had drawn for this request, if any,
	// so a report can compare intent with what happened.
	Planned CancelKind `json:"planned,omitempty"`

	// Status and Message describe errors (Status 0: transport or protocol).
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`

	// Room is the router's X-PD-Bootstrap-Room, when HasRoom.
	Room    uint64 `json:"room,omitempty"`
	HasRoom bool   `json:"has_room,omitempty"`

	// Integrity is set on a completed request whose answer failed Check;
	// Expected and Got are filled when the check says what it expected.
	Integrity string `json:"integrity,omitempty"`
	Expected  string `json:"expected,omitempty"`
	Got       string `json:"got,omitempty"`
}

// Sink receives every Outcome exactly once. It is called concurrently from
// many goroutines and must not block for long (append under a mutex, or send
// to a buffered channel the recorder drains).
type Sink func(Outcome)

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
func applyCheck(o *Outcome, check CheckFunc, msgs []model.Message, got string) {
	if check == nil || o.Kind != KindCompleted {
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
func (c *Counters) end(o *Outcome) {
	switch o.Kind {
	case KindCompleted:
		c.completed.Add(1)
	case KindCancelled:
		if o.Phase == PhaseDecode {
			c.cancelledDecode.Add(1)
		} else {
			c.cancelledQueued.Add(1)
		}
	case KindError:
		c.errors.Add(1)
	case KindHung:
		c.hung.Add(1)
	}
	if o.Integrity != "" {
		c.integrity.Add(1)
	}
	c.inFlight.Add(-1)
}
