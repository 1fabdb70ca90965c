package agents

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Incarnation is what an agent draws when it (re)starts: how long it lives
// before being killed and how long it pauses before the next restart.
type Incarnation struct {
	Agent       int `json:"agent"`
	Incarnation int `json:"incarnation"`
	// KillAfter is the incarnation's lifetime; 0 means it is never killed.
	KillAfter time.Duration `json:"kill_after,omitempty"`
	// RestartDelay is the pause after a kill before the next incarnation.
	RestartDelay time.Duration `json:"restart_delay,omitempty"`
}

// Decision is one request's fate, drawn before it is sent and independent of
// timing: the same seed gives the same decisions in the same order.
type Decision struct {
	Agent       int `json:"agent"`
	Incarnation int `json:"incarnation"`
	Session     int `json:"session"`
	Turn        int `json:"turn"`
	// Sub is 0 for a turn's main request and 1..n for its parallel sub-requests.
	Sub int `json:"sub,omitempty"`
	// PromptSeed and PromptWords generate the text this request appends
	// (user prompt on turn 0, tool output later, a sub-task for Sub > 0).
	PromptSeed  uint64 `json:"prompt_seed"`
	PromptWords int    `json:"prompt_words"`
	MaxTokens   int    `json:"max_tokens"`
	// Cancel is the planned cancellation with its parameter: CancelDelay
	// after send for queued, CancelAfter tokens for decode, Deadline for
	// deadline.
	Cancel      outcome.CancelKind `json:"cancel,omitempty"`
	CancelDelay time.Duration      `json:"cancel_delay,omitempty"`
	CancelAfter int                `json:"cancel_after,omitempty"`
	Deadline    time.Duration      `json:"deadline,omitempty"`
	// Think is the pause after the turn (main requests only).
	Think time.Duration `json:"think,omitempty"`
	// Rid, when set, is sent as the request's rid; with Retry the request
	// is sent again after its queued cancel (at once, or RetryDelay later), with the same rid, or
	// with RetryRid when that is set.
	Rid   string `json:"rid,omitempty"`
	Retry bool   `json:"retry,omitempty"`
	// Room, when not 0, is sent as the request's bootstrap_room (the retry
	// of a Retry decision sends it too); RetryRid is the retry's own rid.
	Room     uint64 `json:"room,omitempty"`
	RetryRid string `json:"retry_rid,omitempty"`
	// RetryDelay is the pause between the queued cancel and the retry.
	RetryDelay time.Duration `json:"retry_delay,omitempty"`
	// AbortRequest makes the queued or decode cancel a POST
	// /abort_request {"rid": Rid} to every engine instead of closing the
	// connection.
	AbortRequest bool `json:"abort_request,omitempty"`
	// resent marks the second send of a Retry decision.
	resent bool
}

// planner draws one agent incarnation's decisions from its own PCG stream.
type planner struct {
	o       Options
	rng     *rand.Rand
	inc     Incarnation
	session int
	turn    int // next turn in the session
	turns   int // turns in the current session
}

func newPlanner(seed uint64, o Options, agent, incarnation int) *planner {
	rng := rand.New(rand.NewPCG(mix64(seed^0x5eed_a6e7), mix64(uint64(agent)<<32|uint64(incarnation))))
	p := &planner{o: o, rng: rng, session: -1}
	p.inc = Incarnation{Agent: agent, Incarnation: incarnation}
	if o.KillEvery > 0 {
		p.inc.KillAfter = expDuration(rng, o.KillEvery)
	}
	p.inc.RestartDelay = uniform(rng, 0, o.RestartDelay)
	return p
}

// next draws the next turn: its main request first, then its sub-requests.
func (p *planner) next() []Decision {
	if p.turn >= p.turns {
		p.session++
		p.turn = 0
		p.turns = 1 + p.rng.IntN(p.o.TurnsPerSession)
	}
	subs := 0
	if p.o.SubRequestRate > 0 && p.rng.Float64() < p.o.SubRequestRate {
		subs = 1 + p.rng.IntN(p.o.MaxSubRequests)
	}
	out := make([]Decision, 0, 1+subs)
	for sub := range 1 + subs {
		d := Decision{Agent: p.inc.Agent, Incarnation: p.inc.Incarnation,
			Session: p.session, Turn: p.turn, Sub: sub, PromptSeed: p.rng.Uint64()}
		switch {
		case sub > 0:
			d.PromptWords = p.o.UserPromptWords
		case p.turn == 0:
			d.PromptWords = p.o.UserPromptWords
		default:
			d.PromptWords = max(1, p.o.ToolOutputWords/2+p.rng.IntN(p.o.ToolOutputWords/2+1))
		}
		d.MaxTokens = max(1, p.o.MaxTokens/2+p.rng.IntN(p.o.MaxTokens-p.o.MaxTokens/2+1))
		u := p.rng.Float64()
		switch q, dc := p.o.CancelQueuedRate, p.o.CancelDecodeRate; {
		case u < q:
			d.Cancel, d.CancelDelay = outcome.CancelQueued, uniform(p.rng, 0, p.o.CancelQueuedDelay)
		case u < q+dc && d.MaxTokens >= 2:
			d.Cancel, d.CancelAfter = outcome.CancelDecode, 1+p.rng.IntN(d.MaxTokens-1)
		case u < q+dc+p.o.DeadlineRate:
			d.Cancel, d.Deadline = outcome.CancelDeadline, uniform(p.rng, p.o.Deadline/2, p.o.Deadline)
		}
		// Drawn only when asked for, so the draws of every other scenario
		// stay as they were.
		if d.Cancel == outcome.CancelQueued && p.o.RetrySameRidRate > 0 && p.rng.Float64() < p.o.RetrySameRidRate {
			d.Retry, d.Rid = true, "pdchaos-"+strconv.FormatUint(d.PromptSeed, 16)
		}
		if d.Cancel == outcome.CancelQueued && !d.Retry && p.o.RetrySameRoomRate > 0 && p.rng.Float64() < p.o.RetrySameRoomRate {
			d.Retry, d.Room = true, p.rng.Uint64()>>1+1
			d.Rid, d.RetryRid = fmt.Sprintf("pdchaos-room-%016x-0", d.Room), fmt.Sprintf("pdchaos-room-%016x-1", d.Room)
		}
		if d.Retry && p.o.RetryDelay > 0 {
			d.RetryDelay = uniform(p.rng, 0, p.o.RetryDelay)
		}
		if (d.Cancel == outcome.CancelQueued || d.Cancel == outcome.CancelDecode) && !d.Retry &&
			p.o.AbortRequestRate > 0 && p.rng.Float64() < p.o.AbortRequestRate {
			// Fixed width: SGLang's scheduler aborts every rid that starts
			// with the one given, so no rid may be another's prefix.
			d.AbortRequest, d.Rid = true, fmt.Sprintf("pdchaos-abort-%016x", d.PromptSeed)
		}
		if sub == 0 && p.o.ThinkTime > 0 {
			d.Think = uniform(p.rng, 0, 2*p.o.ThinkTime)
		}
		out = append(out, d)
	}
	p.turn++
	return out
}

// Plan returns agent's incarnation draw and its first n request decisions
// (sub-requests included) for seed and o: exactly what a Swarm with the same
// seed and options decides, so a test or a repro can compare runs.
func Plan(seed uint64, o Options, agent, incarnation, n int) (Incarnation, []Decision) {
	p := newPlanner(seed, o.WithDefaults(), agent, incarnation)
	var out []Decision
	for len(out) < n {
		out = append(out, p.next()...)
	}
	return p.inc, out[:n]
}

// KillAllTimes returns the first n scheduled kill-all offsets for seed and o:
// the explicit KillAllAt entries, then KillAllEvery draws after the last one.
func KillAllTimes(seed uint64, o Options, n int) []time.Duration {
	g := newKillAllSchedule(seed, o)
	var out []time.Duration
	for len(out) < n {
		at, ok := g.next()
		if !ok {
			break
		}
		out = append(out, at)
	}
	return out
}

// SystemPrompt is the shared system prompt of a swarm: words long, a pure
// function of seed so every agent (and every rerun) sends the same prefix.
func SystemPrompt(seed uint64, words int) string {
	return "You are a coding agent. Follow the repository conventions. " + text(mix64(seed^0x5157e3), words)
}

// codeWords gives generated prompts the texture of code and tool output.
const codeWords = "func return if err != nil ctx context.Context { } ( ) := for range go defer " +
	"select case chan struct type interface package import main.go test.go // TODO fix " +
	"the bug in handler read file write patch diff --- +++ @@ line grep -n ls cd make " +
	"build ok FAIL PASS panic: index out of range goroutine [running]: error: undefined"

// text generates n words of pseudo code from seed.
func text(seed uint64, n int) string {
	vocab := strings.Fields(codeWords)
	rng := rand.New(rand.NewPCG(seed, 0x7e47))
	var b strings.Builder
	b.Grow(n * 7)
	for i := range n {
		if i > 0 {
			if i%12 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		switch r := rng.IntN(8); {
		case r < 5:
			b.WriteString(vocab[rng.IntN(len(vocab))])
		case r < 7:
			b.WriteString(model.Word(model.Token(rng.IntN(model.VocabSize))))
		default:
			b.WriteString(strconv.Itoa(rng.IntN(1000)))
		}
	}
	return b.String()
}

// uniform draws a duration in [lo, hi].
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// expDuration draws an exponential duration with the given mean, at least 1ms.
func expDuration(rng *rand.Rand, mean time.Duration) time.Duration {
	d := time.Duration(rng.ExpFloat64() * float64(mean))
	if d < time.Millisecond || d > math.MaxInt64/2 {
		d = time.Millisecond
	}
	return d
}

// mix64 is splitmix64's finaliser, used to derive independent PCG streams.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
