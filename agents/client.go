package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/sse"
)

// causeError values are context cancellation causes: the first cause wins,
// which is what gives every request exactly one outcome.
type causeError string

func (c causeError) Error() string { return string(c) }

const (
	causeHung     causeError = "hang deadline"
	causeCancel   causeError = "planned cancel"
	causeDeadline causeError = "client deadline"
	causeKill     causeError = "agent killed"
	causeKillAll  causeError = "all agents killed"
	causeStop     causeError = "swarm stopped"
)

// reasonOf maps a cancellation cause to a Reason; unknown causes (the
// caller's ctx ending) are the run stopping.
func reasonOf(err error) outcome.Reason {
	switch err {
	case causeCancel:
		return outcome.ReasonCancel
	case causeDeadline:
		return outcome.ReasonDeadline
	case causeKill:
		return outcome.ReasonKill
	case causeKillAll:
		return outcome.ReasonKillAll
	}
	return outcome.ReasonStop
}

// failed is an error with how it reached the client.
type failed struct {
	kind outcome.Failure
	err  error
}

func (f *failed) Error() string { return f.err.Error() }
func (f *failed) Unwrap() error { return f.err }

func failure(kind outcome.Failure, format string, args ...any) error {
	return &failed{kind: kind, err: fmt.Errorf(format, args...)}
}

// failureOf is err's Failure; an error that says nothing is a transport one.
func failureOf(err error) outcome.Failure {
	var f *failed
	if errors.As(err, &f) {
		return f.kind
	}
	return outcome.FailureTransport
}

// caller sends streamed chat completions and turns each into one Outcome.
type caller struct {
	client *http.Client
	url    string
	// abortURLs are the engines' /abort_request URLs (Config.AbortURLs).
	abortURLs []string
	base      time.Time
	hang      time.Duration
	check     CheckFunc
	counters  *Counters
	sink      Sink
}

// do sends one request shaped by d and returns its outcome (already counted
// and delivered to the sink) and, on completion, the answer text.
func (c *caller) do(ctx context.Context, d Decision, msgs []model.Message, body []byte) (outcome.Outcome, string) {
	o := outcome.Outcome{Source: outcome.SourceAgent, Agent: d.Agent, Incarnation: d.Incarnation,
		Session: d.Session, Turn: d.Turn, Sub: d.Sub, MaxTokens: d.MaxTokens, Planned: d.Cancel, Rid: d.Rid, Retry: d.resent}
	if d.Room != 0 {
		// The client chose its bootstrap room: it knows the room before
		// any answer, so a request cancelled before the response headers
		// still names it (the room header, when one comes, says what the
		// gateway used).
		o.Room, o.HasRoom = d.Room, true
	}
	c.counters.begin()
	sent := time.Now()
	o.Start = sent.Sub(c.base)

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hang := time.AfterFunc(c.hang, func() { cancel(causeHung) })
	defer hang.Stop()
	// A cancel by abort_request runs beside the stream, which is read on
	// to its end; do returns only once the abort's POSTs are done.
	var ab *abortCall
	if d.AbortRequest && len(c.abortURLs) > 0 {
		ab = &abortCall{caller: c, rid: d.Rid, stop: make(chan struct{})}
		defer ab.wait()
	}
	switch d.Cancel {
	case outcome.CancelQueued:
		if ab != nil {
			ab.after(ctx, d.CancelDelay)
			break
		}
		t := time.AfterFunc(d.CancelDelay, func() { cancel(causeCancel) })
		defer t.Stop()
	case outcome.CancelDeadline:
		t := time.AfterFunc(d.Deadline, func() { cancel(causeDeadline) })
		defer t.Stop()
	}
	cancelAfter := 0
	atCancel := func() error { cancel(causeCancel); return causeCancel }
	if d.Cancel == outcome.CancelDecode {
		cancelAfter = d.CancelAfter
		if ab != nil {
			atCancel = func() error { ab.after(ctx, 0); return nil }
		}
	}

	var st stream
	err := c.send(rctx, &o, body, &st, cancelAfter, atCancel)
	o.End = time.Since(c.base)
	st.timings(&o, sent)
	if ab != nil {
		ab.stopWaiting()
		if at, wall, ok := ab.sentAt(); ok && (err == nil || rctx.Err() == nil) {
			// The client's abort went out: the answer that followed, any
			// way it ended, is that cancel's result.
			o.Kind, o.Reason, o.AbortSent = outcome.KindCancelled, outcome.ReasonAbortRequest, at
			o.Phase = outcome.PhaseQueued
			if st.tokens > 0 && st.first.Before(wall) {
				o.Phase = outcome.PhaseDecode
			}
			switch f := failureOf(err); {
			case err == nil:
				o.AnswerAfterAbort = outcome.AnswerCompleted
				applyCheck(&o, c.check, msgs, st.answer.String())
			case f.WellFormed():
				o.AnswerAfterAbort, o.Message, o.Failure = outcome.AnswerError, err.Error(), f
			default:
				o.AnswerAfterAbort, o.Message, o.Failure = outcome.AnswerBroken, err.Error(), f
			}
			c.counters.end(&o)
			if c.sink != nil {
				c.sink(o)
			}
			return o, ""
		}
	}
	switch {
	case err == nil:
		o.Kind = outcome.KindCompleted
		applyCheck(&o, c.check, msgs, st.answer.String())
	case o.Status != 0 && (o.Status < 200 || o.Status > 299):
		o.Kind, o.Message, o.Failure = outcome.KindError, err.Error(), failureOf(err)
	case rctx.Err() != nil:
		o.Kind, o.Phase = outcome.KindCancelled, outcome.PhaseQueued
		if st.tokens > 0 {
			o.Phase = outcome.PhaseDecode
		}
		if cause := context.Cause(rctx); cause == causeHung {
			o.Kind = outcome.KindHung
		} else {
			o.Reason = reasonOf(cause)
		}
	default:
		o.Kind, o.Message, o.Failure = outcome.KindError, err.Error(), failureOf(err)
	}
	c.counters.end(&o)
	if c.sink != nil {
		c.sink(o)
	}
	if o.Kind != outcome.KindCompleted {
		return o, ""
	}
	return o, st.answer.String()
}

// doRetrying is do, then, for a request planned to be retried whose queued
// cancel happened, the same body (the same rid) sent again, at once or after
// its RetryDelay, and not cancelled: its outcome is the one returned, marked
// Retry.
func (c *caller) doRetrying(ctx context.Context, d Decision, msgs []model.Message, body func(rid string) []byte) (outcome.Outcome, string) {
	o, answer := c.do(ctx, d, msgs, body(d.Rid))
	if !d.Retry || o.Kind != outcome.KindCancelled || ctx.Err() != nil {
		return o, answer
	}
	if d.RetryDelay > 0 {
		t := time.NewTimer(d.RetryDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return o, answer
		}
	}
	again := d
	again.Cancel, again.CancelDelay, again.Retry, again.RetryDelay, again.resent = "", 0, false, 0, true
	if d.RetryRid != "" {
		again.Rid = d.RetryRid
	}
	return c.do(ctx, again, msgs, body(again.Rid))
}

// send posts body and reads the event stream into st; nil means [DONE] was
// read. It sets o.Status and the room from the response.
func (c *caller) send(ctx context.Context, o *outcome.Outcome, body []byte, st *stream,
	cancelAfter int, atCancel func() error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		return failure(outcome.FailureTransport, "post chat completion: %w", err)
	}
	defer resp.Body.Close()
	o.Status = resp.StatusCode
	if v := resp.Header.Get(contract.RoomHeader); v != "" {
		if room, perr := strconv.ParseUint(v, 10, 64); perr == nil {
			o.Room, o.HasRoom = room, true
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, ok := errorMessage(resp.Body)
		kind := outcome.FailureHTTP
		if !ok {
			kind = outcome.FailureBadBody
		}
		return failure(kind, "status %d: %s", resp.StatusCode, msg)
	}
	if err := st.read(resp.Body, cancelAfter, atCancel); err != nil {
		return err
	}
	// Let the connection be reused: read the chunked terminator.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return nil
}

// errorMessage extracts an OpenAI {"error":{"message":..}} body (ok), or
// returns the start of the raw body (not ok: not the error shape the API
// defines).
func errorMessage(r io.Reader) (msg string, ok bool) {
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		return e.Error.Message, true
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512]
	}
	return s, false
}

// chunk is the part of a chat.completion(.chunk) the swarm reads.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// stream accumulates one SSE response.
type stream struct {
	answer      strings.Builder
	tokens      int
	finish      string
	first, last time.Time
	maxGap      time.Duration
}

// read consumes SSE events until [DONE] (nil), an error event or a
// truncated stream. At cancelAfter tokens it calls atCancel once and stops
// with its error, or reads on when it returns nil.
func (st *stream) read(body io.Reader, cancelAfter int, atCancel func() error) error {
	events := sse.NewReader(body, 0)
	for {
		payload, err := events.Next()
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, sse.ErrTruncated):
			return failure(outcome.FailureTruncated, "truncated stream: ended without [DONE]")
		case err != nil:
			return failure(outcome.FailureTransport, "read stream: %w", err)
		}
		var ch chunk
		if jerr := json.Unmarshal(payload, &ch); jerr != nil {
			return failure(outcome.FailureBadEvent, "decode stream event: %w", jerr)
		}
		if ch.Error != nil {
			return failure(outcome.FailureErrorEvent, "stream error event: %s", ch.Error.Message)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != "" {
				st.token(c.Delta.Content)
			}
			if c.FinishReason != "" {
				st.finish = c.FinishReason
			}
		}
		if cancelAfter > 0 && st.tokens >= cancelAfter {
			cancelAfter = 0
			if err := atCancel(); err != nil {
				return err
			}
		}
	}
}

func (st *stream) token(s string) {
	now := time.Now()
	if st.tokens == 0 {
		st.first = now
	} else if gap := now.Sub(st.last); gap > st.maxGap {
		st.maxGap = gap
	}
	st.last = now
	st.tokens++
	st.answer.WriteString(s)
}

// timings copies token counts and latencies into o.
func (st *stream) timings(o *outcome.Outcome, sent time.Time) {
	o.Tokens, o.FinishReason = st.tokens, st.finish
	if st.tokens == 0 {
		return
	}
	o.TTFT = st.first.Sub(sent)
	o.MaxITL = st.maxGap
	if st.tokens > 1 {
		o.ITL = st.last.Sub(st.first) / time.Duration(st.tokens-1)
	}
}
