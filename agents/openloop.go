package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Load shapes of an open-loop phase, mapped onto vegeta's pacers.
const (
	ShapeConstant = "constant"
	ShapeSine     = "sine"
	ShapeLinear   = "linear"
)

// reqHeader carries the open-loop request number, from which its prompt is
// regenerated to check the answer (vegeta's Result does not keep the body sent).
const reqHeader = "X-Pdchaos-Req"

// LoadPhase is one open-loop phase: one pacer held for Duration. Each phase
// gets its own vegeta attacker (they are single-use).
type LoadPhase struct {
	// Name labels the phase's outcomes in reports.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Shape is constant (the zero value), sine or linear.
	Shape string `json:"shape,omitempty" yaml:"shape,omitempty"`
	// Rate is requests/s: the constant rate, the sine mean or the linear start.
	Rate float64 `json:"rate" yaml:"rate"`
	// Amp is the sine amplitude in requests/s; it must be below Rate.
	Amp float64 `json:"amp,omitempty" yaml:"amp,omitempty"`
	// Period is the sine period.
	Period time.Duration `json:"period,omitempty" yaml:"period,omitempty"`
	// Slope is the linear ramp in requests/s per second.
	Slope float64 `json:"slope,omitempty" yaml:"slope,omitempty"`
	// Duration is how long the phase lasts; it must be > 0.
	Duration time.Duration `json:"duration" yaml:"duration"`
}

// OpenLoopOptions are the scenario knobs of open-loop load.
type OpenLoopOptions struct {
	// Phases run one after another.
	Phases []LoadPhase `json:"phases" yaml:"phases"`
	// PromptWords is each request's prompt length; 0 means 50.
	PromptWords int `json:"prompt_words,omitempty" yaml:"prompt_words,omitempty"`
	// MaxTokens is each request's max_tokens; 0 means 16.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// Stream asks for an event stream; false sends plain completions.
	Stream bool `json:"stream,omitempty" yaml:"stream,omitempty"`
	// HangTimeout reports a request hung when it has not ended in time; 0
	// means DefaultHangTimeout.
	HangTimeout time.Duration `json:"hang_timeout,omitempty" yaml:"hang_timeout,omitempty"`
}

// Validate reports the first bad field by its YAML name.
func (o OpenLoopOptions) Validate() error {
	if len(o.Phases) == 0 {
		return errors.New("open-loop option phases: empty")
	}
	for i, p := range o.Phases {
		bad := func(field, why string) error {
			return fmt.Errorf("open-loop option phases[%d].%s: %s", i, field, why)
		}
		switch {
		case p.Duration <= 0:
			return bad("duration", "must be > 0")
		case !(p.Rate > 0) || math.IsInf(p.Rate, 0):
			return bad("rate", "must be > 0 (vegeta reads 0 as unlimited)")
		case p.Shape == ShapeSine && (p.Period <= 0 || p.Amp < 0 || p.Amp >= p.Rate):
			return bad("amp", "sine needs period > 0 and 0 <= amp < rate")
		case p.Shape != "" && p.Shape != ShapeConstant && p.Shape != ShapeSine && p.Shape != ShapeLinear:
			return bad("shape", fmt.Sprintf("%q is not constant, sine or linear", p.Shape))
		}
	}
	if o.PromptWords < 0 || o.MaxTokens < 0 || o.HangTimeout < 0 {
		return errors.New("open-loop option prompt_words, max_tokens or hang_timeout: negative")
	}
	return nil
}

// OpenLoopConfig is what RunOpenLoop needs besides its options.
type OpenLoopConfig struct {
	Endpoint string
	Model    string
	Seed     uint64
	Options  OpenLoopOptions
	// Base is the run's time origin for outcome offsets (zero: now).
	Base time.Time
	// Sink, Check: as in Config.
	Sink  Sink
	Check CheckFunc
	// Counters, when set, is where live totals go (e.g. shared with a swarm).
	Counters *Counters
}

// rate converts requests/s into a vegeta rate without losing fractions.
func rate(perSec float64) vegeta.Rate {
	return vegeta.Rate{Freq: max(1, int(math.Round(perSec*1000))), Per: 1000 * time.Second}
}

func (p LoadPhase) pacer() vegeta.Pacer {
	switch p.Shape {
	case ShapeSine:
		return vegeta.SinePacer{Period: p.Period, Mean: rate(p.Rate), Amp: rate(p.Amp), StartAt: vegeta.MeanUp}
	case ShapeLinear:
		return vegeta.LinearPacer{StartAt: rate(p.Rate), Slope: p.Slope}
	}
	return rate(p.Rate)
}

// RunOpenLoop sends open-loop load phase after phase until the phases end or
// ctx does; in-flight requests are then cancelled (reason stop). Every request
// gets one Outcome. It returns when every request and connection is done.
func RunOpenLoop(ctx context.Context, cfg OpenLoopConfig) error {
	o := cfg.Options
	if err := o.Validate(); err != nil {
		return fmt.Errorf("run open-loop load: %w", err)
	}
	if o.PromptWords == 0 {
		o.PromptWords = 50
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 16
	}
	if o.HangTimeout == 0 {
		o.HangTimeout = DefaultHangTimeout
	}
	if cfg.Model == "" {
		cfg.Model = "pdchaos"
	}
	if cfg.Base.IsZero() {
		cfg.Base = time.Now()
	}
	if cfg.Counters == nil {
		cfg.Counters = &Counters{}
	}
	base := newTransport(10000)
	defer base.CloseIdleConnections()
	url := strings.TrimRight(cfg.Endpoint, "/") + contract.PathChatCompletions
	var next atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		n := next.Add(1) - 1
		body, err := json.Marshal(map[string]any{"model": cfg.Model, "max_tokens": o.MaxTokens,
			"stream": o.Stream, "messages": openLoopMessages(cfg.Seed, n, o.PromptWords)})
		if err != nil {
			return fmt.Errorf("encode open-loop request: %w", err)
		}
		t.Method, t.URL, t.Body = http.MethodPost, url, body
		t.Header = http.Header{"Content-Type": {"application/json"}, reqHeader: {strconv.FormatUint(n, 10)}}
		return nil
	}
	for i, p := range o.Phases {
		if ctx.Err() != nil {
			break
		}
		tt := &timingTransport{ctx: ctx, base: base, hang: o.HangTimeout, counters: cfg.Counters,
			reqs: make(map[uint64]*olReq)}
		atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tt}))
		name := p.Name
		if name == "" {
			name = "phase-" + strconv.Itoa(i)
		}
		attack(ctx, atk, targeter, p.pacer(), p.Duration, name, func(res *vegeta.Result) {
			if r := tt.take(res.Seq); r != nil {
				out := openLoopOutcome(res, r, cfg, o)
				cfg.Counters.end(&out)
				if cfg.Sink != nil {
					cfg.Sink(out)
				}
			}
		})
	}
	return nil
}

// attack is the one place vegeta is bound to a context: ctx ending stops the
// attacker. It filters the extra ErrNoTargets result and returns once the
// results channel is drained.
func attack(ctx context.Context, atk *vegeta.Attacker, tr vegeta.Targeter, p vegeta.Pacer,
	du time.Duration, name string, fn func(*vegeta.Result)) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			atk.Stop()
		case <-stop:
		}
	})
	defer wg.Wait()
	defer close(stop)
	for res := range atk.Attack(tr, p, du, name) {
		if res.Error == vegeta.ErrNoTargets.Error() && res.Code == 0 {
			continue
		}
		fn(res)
	}
}

// openLoopMessages is the prompt of open-loop request n: a pure function of
// (seed, n), regenerated when the answer is checked.
func openLoopMessages(seed, n uint64, words int) []model.Message {
	return []model.Message{{Role: "user", Content: text(mix64(seed^mix64(n+0x0e11)), words)}}
}

// openLoopOutcome turns one vegeta result into an Outcome.
func openLoopOutcome(res *vegeta.Result, r *olReq, cfg OpenLoopConfig, o OpenLoopOptions) outcome.Outcome {
	out := outcome.Outcome{Source: outcome.SourceOpenLoop, Agent: -1, Session: -1, Turn: int(r.n), MaxTokens: o.MaxTokens,
		Start: r.sent.Sub(cfg.Base), End: r.end.Sub(cfg.Base), Status: int(res.Code)}
	if !r.first.IsZero() {
		out.TTFT = r.first.Sub(r.sent)
	}
	if v := res.Headers.Get(contract.RoomHeader); v != "" {
		if room, err := strconv.ParseUint(v, 10, 64); err == nil {
			out.Room, out.HasRoom = room, true
		}
	}
	out.Phase = outcome.PhaseQueued
	if !r.first.IsZero() {
		out.Phase = outcome.PhaseDecode
	}
	switch {
	case res.Code >= 200 && res.Code <= 299 && res.Error == "":
		answer, err := parseAnswer(res.Body, o.Stream, &out)
		if err != nil {
			out.Kind, out.Message, out.Phase, out.Failure = outcome.KindError, err.Error(), "", failureOf(err)
			return out
		}
		out.Kind, out.Phase = outcome.KindCompleted, ""
		applyCheck(&out, cfg.Check, openLoopMessages(cfg.Seed, r.n, o.PromptWords), answer)
	case res.Code != 0:
		out.Kind, out.Phase = outcome.KindError, ""
		msg, ok := errorMessage(bytes.NewReader(res.Body))
		out.Message, out.Failure = fmt.Sprintf("status %d: %s", res.Code, msg), outcome.FailureHTTP
		if !ok {
			out.Failure = outcome.FailureBadBody
		}
	case r.cause == causeHung:
		out.Kind = outcome.KindHung
	case r.cause != nil:
		out.Kind, out.Reason = outcome.KindCancelled, outcome.ReasonStop
	default:
		out.Kind, out.Message, out.Phase, out.Failure = outcome.KindError, res.Error, "", outcome.FailureTransport
	}
	return out
}

// parseAnswer reads a complete response body, streamed or not.
func parseAnswer(body []byte, streamed bool, out *outcome.Outcome) (string, error) {
	if streamed {
		var st stream
		if err := st.read(bytes.NewReader(body), 0, nil); err != nil {
			return "", err
		}
		out.Tokens, out.FinishReason = st.tokens, st.finish
		return st.answer.String(), nil
	}
	var ch chunk
	if err := json.Unmarshal(body, &ch); err != nil {
		return "", failure(outcome.FailureBadEvent, "decode completion: %w", err)
	}
	if ch.Error != nil {
		return "", failure(outcome.FailureErrorEvent, "completion error: %s", ch.Error.Message)
	}
	if len(ch.Choices) == 0 {
		return "", failure(outcome.FailureBadEvent, "completion has no choices")
	}
	c := ch.Choices[0]
	out.Tokens, out.FinishReason = len(strings.Fields(c.Message.Content)), c.FinishReason
	return c.Message.Content, nil
}
