package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// abortTimeout bounds one engine's answer to /abort_request: SGLang
// answers at once, whatever matched; a stopped engine must not hold the
// client's stream reading back.
const abortTimeout = 2 * time.Second

// abortCall is one request's cancel by abort_request: after a delay it
// POSTs {"rid"} to every engine, once, and remembers when.
type abortCall struct {
	caller *caller
	rid    string
	stop   chan struct{} // closed when the answer has ended: a pending abort is not sent
	once   sync.Once
	wg     sync.WaitGroup

	mu   sync.Mutex
	at   time.Duration // offset from the run's base
	wall time.Time
	sent bool
}

// after sends the abort in delay, unless the answer ends first. With no
// delay it is sent now: marked sent before after returns, posted beside.
func (a *abortCall) after(ctx context.Context, delay time.Duration) {
	a.once.Do(func() {
		if delay <= 0 {
			a.mark()
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if delay > 0 {
				t := time.NewTimer(delay)
				defer t.Stop()
				select {
				case <-t.C:
				case <-a.stop:
					return
				case <-ctx.Done():
					return
				}
				a.mark()
			}
			a.post(ctx)
		}()
	})
}

func (a *abortCall) mark() {
	now := time.Now()
	a.mu.Lock()
	a.at, a.wall, a.sent = now.Sub(a.caller.base), now, true
	a.mu.Unlock()
}

// post sends the abort to every engine and returns when each answered.
func (a *abortCall) post(ctx context.Context) {
	body, _ := json.Marshal(struct {
		Rid string `json:"rid"`
	}{a.rid})
	var wg sync.WaitGroup
	for _, u := range a.caller.abortURLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Best effort, as SGLang's clients do: an engine that does not
			// answer leaves the abort to the other, and the answer's end
			// is what the checks judge.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(actx, http.MethodPost, u, bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := a.caller.client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}()
	}
	wg.Wait()
}

// stopWaiting drops an abort not yet sent: the answer has ended.
func (a *abortCall) stopWaiting() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
}

// wait returns once a started abort's POSTs are done.
func (a *abortCall) wait() {
	a.stopWaiting()
	a.wg.Wait()
}

// sentAt says whether the abort was sent, and when.
func (a *abortCall) sentAt() (at time.Duration, wall time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at, a.wall, a.sent
}

// AbortURL is an engine base URL's abort endpoint, for Config.AbortURLs.
func AbortURL(base string) string { return strings.TrimRight(base, "/") + contract.PathAbortRequest }
