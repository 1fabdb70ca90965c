package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
)

// EngineOptions shape the engine benchmark; zero fields get the defaults.
type EngineOptions struct {
	// Concurrency lists the closed-loop client counts; default 16, 64, 512.
	Concurrency []int
	// Duration is how long each point runs after its warm-up; default 3s.
	Duration time.Duration
	// MaxTokens is the answer length; default 16.
	MaxTokens int
	// PromptWords is the user prompt's length; default 200.
	PromptWords int
	// Progress, when set, receives a line per point.
	Progress func(string)
}

func (o EngineOptions) withDefaults() EngineOptions {
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{16, 64, 512}
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 16
	}
	if o.PromptWords <= 0 {
		o.PromptWords = 200
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Engine measures requests/s, latency and CPU per request through the
// bundled engine's router -> prefill -> decode with unlimited model speed,
// streaming and not, against a bare net/http handler on the same loopback
// that returns the engine's own answer bytes (so the reply size is the
// same). The two alternate point by point, so drift hits both alike.
func Engine(ctx context.Context, o EngineOptions) ([]Figure, error) {
	o = o.withDefaults()
	c, err := engine.StartCluster(ctx, contract.EngineConfig{}, nil)
	if err != nil {
		return nil, fmt.Errorf("engine bench: start cluster: %w", err)
	}
	defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	var out []Figure
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "plain", true: "stream"}[stream]
		body := chatBody(o.PromptWords, o.MaxTokens, stream)
		engineURL := c.Endpoint() + contract.PathChatCompletions
		reply, ctype, err := capture(ctx, engineURL, body)
		if err != nil {
			return nil, fmt.Errorf("engine bench (%s): first answer: %w", mode, err)
		}
		bare, err := startBare(reply, ctype, stream)
		if err != nil {
			return nil, fmt.Errorf("engine bench: bare handler: %w", err)
		}
		bareURL := bare.url + contract.PathChatCompletions
		for _, conc := range o.Concurrency {
			warm := min(o.Duration/4, time.Second)
			closedLoop(ctx, bareURL, body, conc, warm)
			b := closedLoop(ctx, bareURL, body, conc, o.Duration)
			closedLoop(ctx, engineURL, body, conc, warm)
			e := closedLoop(ctx, engineURL, body, conc, o.Duration)
			if err := ctx.Err(); err != nil {
				bare.close()
				return out, err
			}
			if e.ok == 0 || b.ok == 0 {
				bare.close()
				return out, fmt.Errorf("engine bench %s c%d: no request completed (engine %d ok, %d failed: %v; bare %d ok: %v)",
					mode, conc, e.ok, e.failed, e.firstErr, b.ok, b.firstErr)
			}
			name := fmt.Sprintf("engine/%s/c%d", mode, conc)
			note := fmt.Sprintf("%d answers of %d bytes", e.ok, len(reply))
			if e.failed > 0 {
				note += fmt.Sprintf("; %d failed, first: %v", e.failed, e.firstErr)
			}
			out = append(out,
				withRef(Figure{Group: "engine", Name: name + "/rps", Value: e.rps(), Unit: "req/s", Better: Higher, Note: note}, b.rps(), "bare handler"),
				withRef(Figure{Group: "engine", Name: name + "/p50", Value: ms(e.quantile(0.5)), Unit: "ms", Better: Lower}, ms(b.quantile(0.5)), "bare handler"),
				withRef(Figure{Group: "engine", Name: name + "/p99", Value: ms(e.quantile(0.99)), Unit: "ms", Better: Lower}, ms(b.quantile(0.99)), "bare handler"),
				withRef(Figure{Group: "engine", Name: name + "/cpu", Value: e.cpuPerReq(), Unit: "cpu-µs/req", Better: Lower,
					Note: "client and server in one process"}, b.cpuPerReq(), "bare handler"),
			)
			o.Progress(fmt.Sprintf("%s: %.0f req/s (bare %.0f, ratio %.3f), p99 %.1f ms", name, e.rps(), b.rps(), e.rps()/b.rps(), ms(e.quantile(0.99))))
		}
		bare.close()
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func chatBody(words, maxTokens int, stream bool) []byte {
	prompt := strings.TrimSpace(strings.Repeat("refactor the handler ", words/3+1))
	b, _ := json.Marshal(map[string]any{"model": "pdchaos", "max_tokens": maxTokens, "stream": stream,
		"messages": []model.Message{{Role: "user", Content: prompt}}})
	return b
}

// capture fetches one answer whole: the bytes the bare handler replays.
func capture(ctx context.Context, url string, body []byte) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

type bareServer struct {
	url   string
	close func()
}

// startBare serves reply to every POST: a streamed reply is written event
// by event with a flush after each, as a streaming server does.
func startBare(reply []byte, ctype string, stream bool) (*bareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	events := [][]byte{reply}
	if stream {
		events = bytes.SplitAfter(reply, []byte("\n\n"))
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		fl, _ := w.(http.Flusher)
		for _, ev := range events {
			if len(ev) == 0 {
				continue
			}
			_, _ = w.Write(ev)
			if stream && fl != nil {
				fl.Flush()
			}
		}
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the bench reads failures from its clients
		}
	}()
	return &bareServer{url: "http://" + ln.Addr().String(), close: func() { _ = srv.Close(); <-done }}, nil
}
