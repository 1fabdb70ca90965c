package enginetest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/clustertest"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/engine/observe"
)

// noLeaks must be the first call of a test: its cleanup, registered first,
// runs last, after the cluster and every injector have closed.
func noLeaks(t *testing.T, extra ...goleak.Option) {
	t.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, extra...)
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// startCluster starts the in-process engine and closes it when the test ends.
func startCluster(t *testing.T, cfg engine.Config) *engine.Cluster { return clustertest.Start(t, cfg) }

// shortDeadlines makes the fixed engine's backstops (bootstrap, inflight,
// waiting, ack) fire after a second, so lost messages heal quickly.
func shortDeadlines(cfg engine.Config) engine.Config {
	cfg.BootstrapTimeout, cfg.InflightTimeout, cfg.WaitingTimeout, cfg.AckTimeout = time.Second, time.Second, time.Second, time.Second
	return cfg
}

// eventually polls cond until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := poll(t.Context(), timeout, cond); err != nil {
		t.Fatal(err)
	}
}

func poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// consistently checks cond on every poll for the whole window.
func consistently(t *testing.T, window time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(window)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := cond(); err != nil {
			t.Fatalf("condition stopped holding: %v", err)
		}
		if time.Now().After(deadline) {
			return
		}
		<-tick.C
	}
}

func roomsOf(ctx context.Context, base string) (contract.RoomsResponse, error) {
	return observe.Rooms(ctx, base)
}

func roomOn(ctx context.Context, base string, room uint64) (contract.RoomRecord, bool, error) {
	return observe.RoomOn(ctx, base, room)
}

func gauge(ctx context.Context, url, name string) (float64, error) {
	return observe.Gauge(ctx, url, name)
}

func eventIndex(rec contract.RoomRecord, kinds ...string) int {
	return slices.IndexFunc(rec.Events, func(e contract.Event) bool { return slices.Contains(kinds, e.Kind) })
}

func eventKinds(rec contract.RoomRecord) []string {
	var out []string
	for _, e := range rec.Events {
		out = append(out, e.Kind+":"+e.State)
	}
	return out
}

func gaugeIs(ctx context.Context, url, name string, want float64) error {
	v, err := gauge(ctx, url, name)
	if err != nil {
		return err
	}
	if v != want {
		return fmt.Errorf("%s = %v, want %v", name, v, want)
	}
	return nil
}

// drained is nil once every slot gauge on every engine is 0 and no engine
// holds a room.
func drained(ctx context.Context, c *engine.Cluster) error { return observe.Drained(ctx, c) }

// prompt is a chat long enough to span several KV chunks.
func prompt(tag string) []model.Message {
	return []model.Message{
		{Role: "system", Content: strings.Repeat("You are a coding agent working in a large repository. ", 20)},
		{Role: "user", Content: "task " + tag + ": refactor the module and run the tests"},
	}
}

// longText is a /generate prompt of a few hundred tokens.
func longText(tag string) string {
	return strings.Repeat(tag+" edits the parser and reruns the failing test suite ", 20)
}

// chatResult is what a streamed chat came back with.
type chatResult struct {
	text string
	room uint64
	err  error
}

// chat streams one chat completion through the router and returns the
// concatenated content and the room the router chose.
func chat(ctx context.Context, endpoint string, msgs []model.Message, maxTokens int) chatResult {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	body, _ := json.Marshal(map[string]any{"model": "pdchaos-fake", "messages": msgs, "max_tokens": maxTokens, "stream": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return chatResult{err: err}
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return chatResult{err: err}
	}
	defer resp.Body.Close()
	room, _ := strconv.ParseUint(resp.Header.Get(contract.RoomHeader), 10, 64)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return chatResult{room: room, err: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
	}
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "" {
			continue
		}
		if line == "[DONE]" {
			return chatResult{text: out.String(), room: room}
		}
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return chatResult{room: room, err: err}
		}
		if ev.Error != nil {
			return chatResult{room: room, err: fmt.Errorf("stream error: %s", ev.Error.Message)}
		}
		for _, c := range ev.Choices {
			out.WriteString(c.Delta.Content)
		}
	}
	return chatResult{room: room, err: fmt.Errorf("stream ended without [DONE]: %v", sc.Err())}
}

// chatExact runs one chat and checks the answer is exactly the model's.
func chatExact(ctx context.Context, endpoint string, msgs []model.Message, maxTokens int) error {
	r := chat(ctx, endpoint, msgs, maxTokens)
	if r.err != nil {
		return r.err
	}
	if want := model.ExpectedChat(msgs, maxTokens); r.text != want {
		return fmt.Errorf("room %d: answer %q, want %q", r.room, r.text, want)
	}
	return nil
}

// generate sends SGLang /generate through the router with a chosen rid and
// room and returns the text.
func generate(ctx context.Context, endpoint, rid string, room uint64, text string, maxTokens int) (string, error) {
	return clustertest.Generate(ctx, endpoint, rid, room, text, maxTokens)
}

// async runs f in a goroutine and returns a channel with its one result.
// The test waits for it before it ends (cancelling ctx first).
func async[T any](t *testing.T, f func(ctx context.Context) T) (<-chan T, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan T, 1)
	done := make(chan struct{})
	go func() { defer close(done); ch <- f(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ch, cancel
}

// recvWithin waits for a result, failing the test after timeout.
func recvWithin[T any](t *testing.T, ch <-chan T, timeout time.Duration) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("no result within %v", timeout)
		panic("unreachable")
	}
}

// notDone reports an error if ch already has a result.
func notDone[T any](ch <-chan T) error {
	select {
	case v := <-ch:
		return fmt.Errorf("finished while the fault was active: %+v", v)
	default:
		return nil
	}
}

// healthyAfter is the check every test ends with: once the fault is healed,
// the engine holds nothing, a fresh request completes with exactly the
// model's answer, and the gauges drain to 0 again.
func healthyAfter(t *testing.T, c *engine.Cluster, drainWithin time.Duration) {
	t.Helper()
	eventually(t, drainWithin, func() error { return drained(t.Context(), c) })
	if err := c.Health(t.Context()); err != nil {
		t.Fatalf("health after heal: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	fresh := []model.Message{{Role: "user", Content: "a fresh request after the fault healed"}} // short: fits a slow prefill's deadlines
	if err := chatExact(ctx, c.Endpoint(), fresh, 8); err != nil {
		t.Fatalf("fresh request after heal: %v", err)
	}
	eventually(t, drainWithin, func() error { return drained(t.Context(), c) })
}
