package outcome

import "time"

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
	// ReasonAbortRequest: the client cancelled by POST /abort_request
	// {"rid"} to every engine (SGLang's abort endpoint) and kept reading
	// its answer, instead of closing the connection.
	ReasonAbortRequest Reason = "abort-request"
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
	// Rid is the request id the client sent (agents send one only for
	// requests they may retry); Retry marks the second send with it.
	Rid   string `json:"rid,omitempty"`
	Retry bool   `json:"retry,omitempty"`

	// Status and Message describe errors (Status 0: transport or protocol).
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// Failure is what reached the client of an error (empty in logs
	// written before it, and where the client does not classify).
	Failure Failure `json:"failure,omitempty"`

	// AbortSent is, for a cancel by abort_request (Reason
	// ReasonAbortRequest), when the client sent it; End is then when the
	// answer ended after it and AnswerAfterAbort how: AnswerCompleted,
	// AnswerError or AnswerBroken.
	AbortSent        time.Duration `json:"abort_sent,omitempty"`
	AnswerAfterAbort string        `json:"answer_after_abort,omitempty"`

	// Room is the router's X-PD-Bootstrap-Room, when HasRoom.
	Room    uint64 `json:"room,omitempty"`
	HasRoom bool   `json:"has_room,omitempty"`

	// Integrity is set on a completed request whose answer failed Check;
	// Expected and Got are filled when the check says what it expected.
	Integrity string `json:"integrity,omitempty"`
	Expected  string `json:"expected,omitempty"`
	Got       string `json:"got,omitempty"`
}

// How an answer ended after the client's abort_request.
const (
	AnswerCompleted = "completed" // it ran to its finish: the abort found nothing to abort, or was ignored
	AnswerError     = "error"     // an error status or event: the engine's abort
	AnswerBroken    = "broken"    // cut, truncated or undecodable
)

// CancelledAt is when the client cancelled: when it sent its
// abort_request, or else when it gave up (End).
func (o Outcome) CancelledAt() time.Duration {
	if o.Reason == ReasonAbortRequest {
		return o.AbortSent
	}
	return o.End
}

// Failure is how an error reached the client: as an answer the router
// meant (an error status with an OpenAI error body, an error event) or as
// a broken one (a body or event that is not what the API promises, a
// stream cut without [DONE], no answer at all).
type Failure string

// Failures.
const (
	FailureHTTP       Failure = "http"        // an error status with an OpenAI {"error":{...}} body
	FailureErrorEvent Failure = "error-event" // a stream that ended with an error event, or a 200 error body
	FailureBadBody    Failure = "bad-body"    // an error status whose body is not an OpenAI error
	FailureBadEvent   Failure = "bad-event"   // an event or completion that does not decode
	FailureTruncated  Failure = "truncated"   // a stream that ended without [DONE] or an error event
	FailureTransport  Failure = "transport"   // no answer, or one cut by the connection (refused, reset, EOF)
)

// WellFormed reports whether the failure is an answer the API defines:
// an error status with an error body, or an error event.
func (f Failure) WellFormed() bool { return f == FailureHTTP || f == FailureErrorEvent }

// CancelKind is the cancellation an agent draws for a request before sending it.
type CancelKind string

// Planned cancellations; CancelNone (empty) lets the request run to its end.
const (
	CancelNone     CancelKind = ""
	CancelQueued   CancelKind = "queued"
	CancelDecode   CancelKind = "decode"
	CancelDeadline CancelKind = "deadline"
)
