package agents

import (
	"fmt"
	"slices"
	"time"
)

// Defaults applied by Options.WithDefaults to fields left at their zero value.
// Rates, think time, kills and cancels have no default: zero means "off", so a
// zero Options is a calm, never-cancelling swarm of DefaultAgents agents.
const (
	// DefaultAgents is the swarm size of the production incident's lower end.
	DefaultAgents = 30
	// DefaultSystemPromptWords makes the shared prefix long enough that prefix
	// caching and KV transfer of the prompt dominate prefill, as with real agents.
	DefaultSystemPromptWords = 3000
	// DefaultUserPromptWords is the size of the first user message of a session.
	DefaultUserPromptWords = 40
	// DefaultToolOutputWords is the simulated tool output appended every turn.
	DefaultToolOutputWords = 200
	// DefaultMaxContextWords caps one agent's context (system prompt excluded)
	// so that memory per agent stays bounded in long soaks.
	DefaultMaxContextWords = 6000
	// DefaultTurnsPerSession is the largest number of turns of one session.
	DefaultTurnsPerSession = 8
	// DefaultMaxTokens is the largest max_tokens an agent asks for.
	DefaultMaxTokens = 32
	// DefaultMaxSubRequests bounds the parallel fan-out of one turn.
	DefaultMaxSubRequests = 3
	// DefaultHangTimeout is how long a request may go without ending before it
	// is reported hung: a finding about the target, never a harness hang.
	DefaultHangTimeout = 30 * time.Second
)

// Options are the swarm's knobs, loadable from a scenario file (YAML/JSON) and
// overridable field by field on top of a preset. Durations are time.Duration
// (YAML "30s"). Every random draw they describe comes from the run's seed.
type Options struct {
	// Agents is the number of concurrent agents; 0 means DefaultAgents.
	Agents int `json:"agents,omitempty" yaml:"agents,omitempty"`
	// Duration bounds the run; 0 runs until the context ends or Stop.
	Duration time.Duration `json:"duration,omitempty" yaml:"duration,omitempty"`
	// StartSpread staggers agent starts evenly over this window; 0 starts
	// every agent at once (a burst).
	StartSpread time.Duration `json:"start_spread,omitempty" yaml:"start_spread,omitempty"`
	// WarmUp is how long after the last agent started Ready closes, so faults
	// are injected into a loaded system.
	WarmUp time.Duration `json:"warm_up,omitempty" yaml:"warm_up,omitempty"`

	// SystemPromptWords is the length of the system prompt shared by all
	// agents; 0 means DefaultSystemPromptWords.
	SystemPromptWords int `json:"system_prompt_words,omitempty" yaml:"system_prompt_words,omitempty"`
	// UserPromptWords is the length of a session's first user message; 0
	// means DefaultUserPromptWords.
	UserPromptWords int `json:"user_prompt_words,omitempty" yaml:"user_prompt_words,omitempty"`
	// ToolOutputWords is the largest simulated tool output appended per turn
	// (drawn in [1/2, 1] of it); 0 means DefaultToolOutputWords.
	ToolOutputWords int `json:"tool_output_words,omitempty" yaml:"tool_output_words,omitempty"`
	// MaxContextWords caps an agent's context beyond the system prompt; the
	// oldest tool outputs are dropped first. 0 means DefaultMaxContextWords.
	MaxContextWords int `json:"max_context_words,omitempty" yaml:"max_context_words,omitempty"`
	// TurnsPerSession is the largest number of turns in a session (drawn in
	// [1, N]); 0 means DefaultTurnsPerSession.
	TurnsPerSession int `json:"turns_per_session,omitempty" yaml:"turns_per_session,omitempty"`
	// MaxTokens is the largest max_tokens of a request (drawn in [N/2, N]);
	// 0 means DefaultMaxTokens.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// ThinkTime is the mean pause between turns (drawn in [0, 2*mean]); 0
	// means back-to-back turns.
	ThinkTime time.Duration `json:"think_time,omitempty" yaml:"think_time,omitempty"`
	// SubRequestRate is the probability that a turn fans out parallel
	// sub-requests (sub-agents sharing the system prompt); 0 means never.
	SubRequestRate float64 `json:"sub_request_rate,omitempty" yaml:"sub_request_rate,omitempty"`
	// MaxSubRequests bounds the fan-out (drawn in [1, N]); 0 means
	// DefaultMaxSubRequests.
	MaxSubRequests int `json:"max_sub_requests,omitempty" yaml:"max_sub_requests,omitempty"`

	// CancelQueuedRate is the probability that a request is cancelled before
	// its first token (queued or prefilling), after a delay drawn in
	// [0, CancelQueuedDelay] from the send (AIPerf's cancellation delay).
	CancelQueuedRate float64 `json:"cancel_queued_rate,omitempty" yaml:"cancel_queued_rate,omitempty"`
	// CancelQueuedDelay is the largest delay of a queued-phase cancel.
	CancelQueuedDelay time.Duration `json:"cancel_queued_delay,omitempty" yaml:"cancel_queued_delay,omitempty"`
	// CancelDecodeRate is the probability that a request is cancelled during
	// decode, after K tokens drawn in [1, max_tokens-1].
	CancelDecodeRate float64 `json:"cancel_decode_rate,omitempty" yaml:"cancel_decode_rate,omitempty"`
	// DeadlineRate is the probability that a request carries a client deadline
	// drawn in [Deadline/2, Deadline]; the three cancel rates are exclusive
	// and must sum to at most 1.
	DeadlineRate float64 `json:"deadline_rate,omitempty" yaml:"deadline_rate,omitempty"`
	// Deadline is the largest client deadline; required when DeadlineRate > 0.
	Deadline time.Duration `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	// RetrySameRidRate is the probability that a request cancelled before
	// its first token is sent again at once with the same request id
	// (rid), as a client retrying what it gave up on: the engine must
	// refuse the copy while it still holds the first (a duplicate rid) or
	// serve it, and never confuse the two. 0 sends no rid at all.
	RetrySameRidRate float64 `json:"retry_same_rid_rate,omitempty" yaml:"retry_same_rid_rate,omitempty"`
	// RetrySameRoomRate is the probability that a request cancelled before
	// its first token (and not retried with its rid) is sent again at once
	// under a new rid but with the same bootstrap room, as a client that
	// chooses its own rooms (bootstrap_room in the request, which SGLang's
	// OpenAI and /generate bodies take) retries: while prefill or decode
	// still holds the first request's room each must refuse the copy
	// (room in use), and the router must then cancel the copy's other leg,
	// never touching the first. Both sends carry the room and a rid; a
	// gateway that overwrites bootstrap_room just makes it a plain retry.
	RetrySameRoomRate float64 `json:"retry_same_room_rate,omitempty" yaml:"retry_same_room_rate,omitempty"`
	// RetryDelay is the largest pause, drawn in [0, RetryDelay] for each
	// retry, between a queued cancel and its retry (same rid or same
	// room), as a client that backs off before trying again: a copy
	// arriving a deadline after the first meets state that one arriving at
	// once never does (a room remembered as released for the waiting
	// timeout, pages held for the ACK timeout). 0 retries at once.
	RetryDelay time.Duration `json:"retry_delay,omitempty" yaml:"retry_delay,omitempty"`
	// AbortRequestRate is the probability that a queued or decode cancel
	// (one not retried) is made the way SGLang's own tests and tools do it:
	// POST /abort_request {"rid"} to every engine (a gateway has no such
	// route), the connection kept open and the answer read to its end,
	// which must then come soon (an abort, or the answer when the cancel
	// raced its last token). The request carries a rid. Needs the engines'
	// URLs (Config.AbortURLs). 0 cancels by closing the connection only.
	AbortRequestRate float64 `json:"abort_request_rate,omitempty" yaml:"abort_request_rate,omitempty"`
	// HangTimeout reports a request hung when it has not ended this long
	// after it was sent; 0 means DefaultHangTimeout.
	HangTimeout time.Duration `json:"hang_timeout,omitempty" yaml:"hang_timeout,omitempty"`

	// KillEvery is the mean lifetime of an agent incarnation (exponential)
	// before it is killed, dropping all its in-flight requests; 0 never kills.
	KillEvery time.Duration `json:"kill_every,omitempty" yaml:"kill_every,omitempty"`
	// RestartDelay is the largest pause (drawn in [0, N]) before a killed
	// agent restarts with a fresh session.
	RestartDelay time.Duration `json:"restart_delay,omitempty" yaml:"restart_delay,omitempty"`
	// KillAllAt lists run offsets at which every agent is killed at once.
	KillAllAt []time.Duration `json:"kill_all_at,omitempty" yaml:"kill_all_at,omitempty"`
	// KillAllEvery is the mean interval (exponential) between further
	// kill-alls drawn from the seed; 0 means none beyond KillAllAt.
	KillAllEvery time.Duration `json:"kill_all_every,omitempty" yaml:"kill_all_every,omitempty"`
}

// WithDefaults returns o with every zero-valued defaulted field filled in, so
// the rest of the package reads one resolved value.
func (o Options) WithDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Agents, DefaultAgents)
	def(&o.SystemPromptWords, DefaultSystemPromptWords)
	def(&o.UserPromptWords, DefaultUserPromptWords)
	def(&o.ToolOutputWords, DefaultToolOutputWords)
	def(&o.MaxContextWords, DefaultMaxContextWords)
	def(&o.TurnsPerSession, DefaultTurnsPerSession)
	def(&o.MaxTokens, DefaultMaxTokens)
	def(&o.MaxSubRequests, DefaultMaxSubRequests)
	if o.HangTimeout == 0 {
		o.HangTimeout = DefaultHangTimeout
	}
	return o
}

// Validate reports the first bad field by its YAML name, so a scenario file
// error points at the line to fix.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"agents", o.Agents}, {"system_prompt_words", o.SystemPromptWords},
		{"user_prompt_words", o.UserPromptWords}, {"tool_output_words", o.ToolOutputWords},
		{"max_context_words", o.MaxContextWords}, {"turns_per_session", o.TurnsPerSession},
		{"max_tokens", o.MaxTokens}, {"max_sub_requests", o.MaxSubRequests},
	} {
		if f.v < 0 {
			return fmt.Errorf("agents option %s: %d is negative", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"sub_request_rate", o.SubRequestRate}, {"cancel_queued_rate", o.CancelQueuedRate},
		{"cancel_decode_rate", o.CancelDecodeRate}, {"deadline_rate", o.DeadlineRate},
		{"retry_same_rid_rate", o.RetrySameRidRate}, {"retry_same_room_rate", o.RetrySameRoomRate}, {"abort_request_rate", o.AbortRequestRate},
	} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("agents option %s: %v is not a probability in [0, 1]", f.name, f.v)
		}
	}
	if s := o.CancelQueuedRate + o.CancelDecodeRate + o.DeadlineRate; s > 1 {
		return fmt.Errorf("agents option cancel_queued_rate: cancel rates sum to %v > 1", s)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"duration", o.Duration}, {"start_spread", o.StartSpread}, {"warm_up", o.WarmUp},
		{"think_time", o.ThinkTime}, {"cancel_queued_delay", o.CancelQueuedDelay},
		{"deadline", o.Deadline}, {"hang_timeout", o.HangTimeout}, {"kill_every", o.KillEvery},
		{"restart_delay", o.RestartDelay}, {"kill_all_every", o.KillAllEvery}, {"retry_delay", o.RetryDelay},
	} {
		if f.v < 0 {
			return fmt.Errorf("agents option %s: %v is negative", f.name, f.v)
		}
	}
	for i, at := range o.KillAllAt {
		if at < 0 {
			return fmt.Errorf("agents option kill_all_at[%d]: %v is negative", i, at)
		}
	}
	if o.DeadlineRate > 0 && o.Deadline == 0 {
		return fmt.Errorf("agents option deadline: must be > 0 when deadline_rate is %v", o.DeadlineRate)
	}
	if o.RetrySameRidRate > 0 && o.CancelQueuedRate == 0 {
		return fmt.Errorf("agents option retry_same_rid_rate: retries follow queued cancels, and cancel_queued_rate is 0")
	}
	if o.RetrySameRoomRate > 0 && o.CancelQueuedRate == 0 {
		return fmt.Errorf("agents option retry_same_room_rate: retries follow queued cancels, and cancel_queued_rate is 0")
	}
	if o.RetryDelay > 0 && o.RetrySameRidRate+o.RetrySameRoomRate == 0 {
		return fmt.Errorf("agents option retry_delay: it delays retries, and retry_same_rid_rate and retry_same_room_rate are 0")
	}
	if o.AbortRequestRate > 0 && o.CancelQueuedRate+o.CancelDecodeRate == 0 {
		return fmt.Errorf("agents option abort_request_rate: it chooses how queued and decode cancels are made, and cancel_queued_rate and cancel_decode_rate are 0")
	}
	if o.CancelDecodeRate > 0 && o.MaxTokens == 1 {
		return fmt.Errorf("agents option max_tokens: must be >= 2 when cancel_decode_rate > 0")
	}
	return nil
}

// Scaled returns o with every duration multiplied by f: a preset tuned for a
// real deployment, compressed for a quick test against a fast fake engine.
func (o Options) Scaled(f float64) Options {
	sc := func(d *time.Duration) { *d = time.Duration(float64(*d) * f) }
	for _, d := range []*time.Duration{&o.Duration, &o.StartSpread, &o.WarmUp, &o.ThinkTime,
		&o.CancelQueuedDelay, &o.Deadline, &o.HangTimeout, &o.KillEvery, &o.RestartDelay,
		&o.KillAllEvery, &o.RetryDelay} {
		sc(d)
	}
	o.KillAllAt = slices.Clone(o.KillAllAt)
	for i := range o.KillAllAt {
		sc(&o.KillAllAt[i])
	}
	return o
}

// Preset names accepted by Preset.
const (
	// PresetOpenCode30 mirrors the production incident: 30 opencode agents,
	// long sessions, frequent cancels and frequent agent kills.
	PresetOpenCode30 = "opencode-30"
	// PresetBurst80 puts 80 inferences in flight at once and then kills
	// every agent: the mass ABORT cascade.
	PresetBurst80 = "burst-80"
	// PresetCalm is a small well-behaved swarm: the baseline a fault is
	// compared against.
	PresetCalm = "calm"
)

// PresetNames lists the presets, for CLI help and scenario validation.
func PresetNames() []string { return []string{PresetOpenCode30, PresetBurst80, PresetCalm} }

// Preset returns the named production-shaped Options; callers override
// fields on the returned value.
func Preset(name string) (Options, error) {
	switch name {
	case PresetOpenCode30:
		return Options{
			Agents: 30, StartSpread: 5 * time.Second, WarmUp: 10 * time.Second,
			SystemPromptWords: 3000, UserPromptWords: 60, ToolOutputWords: 400,
			MaxContextWords: 8000, TurnsPerSession: 12, MaxTokens: 128,
			ThinkTime: 2 * time.Second, SubRequestRate: 0.15, MaxSubRequests: 3,
			CancelQueuedRate: 0.05, CancelQueuedDelay: 300 * time.Millisecond,
			CancelDecodeRate: 0.10, DeadlineRate: 0.02, Deadline: 20 * time.Second,
			HangTimeout: 60 * time.Second, KillEvery: 60 * time.Second,
			RestartDelay: 3 * time.Second,
		}, nil
	case PresetBurst80:
		return Options{
			Agents: 80, WarmUp: 2 * time.Second,
			SystemPromptWords: 3000, UserPromptWords: 60, ToolOutputWords: 400,
			MaxContextWords: 8000, TurnsPerSession: 4, MaxTokens: 256,
			SubRequestRate: 0.1, MaxSubRequests: 2, CancelDecodeRate: 0.05,
			HangTimeout: 60 * time.Second, RestartDelay: time.Second,
			KillAllAt: []time.Duration{5 * time.Second}, KillAllEvery: 30 * time.Second,
		}, nil
	case PresetCalm:
		return Options{
			Agents: 8, StartSpread: 2 * time.Second, WarmUp: 3 * time.Second,
			TurnsPerSession: 6, MaxTokens: 64, ThinkTime: 3 * time.Second,
			CancelDecodeRate: 0.02, HangTimeout: 60 * time.Second,
		}, nil
	}
	return Options{}, fmt.Errorf("agents preset %q: unknown, want one of %v", name, PresetNames())
}
