package agents

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// olReq is what the timing transport learns about one open-loop request:
// vegeta's Latency is the full response time, so first-byte time, the hang
// deadline and the request number are tracked here, keyed by X-Vegeta-Seq.
type olReq struct {
	n                uint64
	sent, first, end time.Time
	cause            error // cancellation cause when it ended early, else nil
}

// timingTransport wraps the shared transport for one attack phase: it binds
// each request to the run's ctx with a hang deadline (vegeta builds requests
// without a ctx) and timestamps the first body byte.
type timingTransport struct {
	ctx      context.Context
	base     http.RoundTripper
	hang     time.Duration
	counters *Counters

	mu   sync.Mutex
	reqs map[uint64]*olReq
}

// RoundTrip implements http.RoundTripper.
func (t *timingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	seq, _ := strconv.ParseUint(req.Header.Get("X-Vegeta-Seq"), 10, 64)
	n, _ := strconv.ParseUint(req.Header.Get(reqHeader), 10, 64)
	r := &olReq{n: n, sent: time.Now()}
	t.mu.Lock()
	t.reqs[seq] = r
	t.mu.Unlock()
	t.counters.begin()
	ctx, cancel := context.WithTimeoutCause(t.ctx, t.hang, causeHung)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		r.finish(ctx, cancel)
		return nil, err
	}
	resp.Body = &timedBody{rc: resp.Body, r: r, ctx: ctx, cancel: cancel}
	return resp, nil
}

// take removes and returns the record of request seq (nil if it never
// reached the transport, e.g. a targeter error).
func (t *timingTransport) take(seq uint64) *olReq {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.reqs[seq]
	delete(t.reqs, seq)
	return r
}

func (r *olReq) finish(ctx context.Context, cancel context.CancelFunc) {
	if r.end.IsZero() {
		r.end = time.Now()
		if ctx.Err() != nil {
			r.cause = context.Cause(ctx)
		}
	}
	cancel()
}

// timedBody records the first byte and ends the request's ctx on Close.
type timedBody struct {
	rc     io.ReadCloser
	r      *olReq
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.r.first.IsZero() {
		b.r.first = time.Now()
	}
	if err != nil && err != io.EOF && b.ctx.Err() != nil && b.r.cause == nil {
		b.r.cause = context.Cause(b.ctx)
	}
	return n, err
}

func (b *timedBody) Close() error {
	err := b.rc.Close()
	b.r.finish(b.ctx, b.cancel)
	return err
}
