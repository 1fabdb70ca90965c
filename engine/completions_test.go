package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
	"github.com/pdchaos/pdchaos/sse"
)

// textCompletion is the part of OpenAI's text_completion object a client
// reads, whole or streamed.
type textCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func postCompletion(t *testing.T, base string, body map[string]any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+contract.PathCompletions, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", contract.PathCompletions, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// The router serves OpenAI's text completions as SGLang's servers do: the
// prompt as it is (no chat template), whole or streamed as text_completion
// objects, with usage when stream_options asks for it; a prompt given as a
// list of one string is the same prompt.
func TestRouterServesTextCompletions(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	const prompt = "def fib(n):\n    # return the n-th Fibonacci number"
	want := model.Expected(prompt, 9)

	for _, p := range []any{prompt, []string{prompt}} {
		resp := postCompletion(t, c.Endpoint(), map[string]any{"model": "m", "prompt": p, "max_tokens": 9})
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("prompt %#v: status %d: %s", p, resp.StatusCode, b)
		}
		var got textCompletion
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatalf("decode the answer: %v", err)
		}
		if got.Object != "text_completion" || !strings.HasPrefix(got.ID, "cmpl-") || len(got.Choices) != 1 {
			t.Fatalf("prompt %#v: answer %+v, want one choice of a text_completion with a cmpl- id", p, got)
		}
		if ch := got.Choices[0]; ch.Text != want || ch.FinishReason == nil || *ch.FinishReason != "length" {
			t.Errorf("prompt %#v: choice %+v, want text %q finished by length", p, ch, want)
		}
		if u := got.Usage; u == nil || u.CompletionTokens != 9 || u.PromptTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("prompt %#v: usage %+v, want 9 completion tokens and a consistent total", p, got.Usage)
		}
	}

	resp := postCompletion(t, c.Endpoint(), map[string]any{"model": "m", "prompt": prompt, "max_tokens": 9, "stream": true,
		"stream_options": map[string]any{"include_usage": true}})
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("streamed: status %d, content type %q", resp.StatusCode, ct)
	}
	events := sse.NewReader(resp.Body, 0)
	var text strings.Builder
	var finished, usage bool
	for {
		data, err := events.Next()
		if errors.Is(err, io.EOF) {
			break // [DONE]
		}
		if err != nil {
			t.Fatalf("read the stream (a stream that ends before [DONE] is %v): %v", sse.ErrTruncated, err)
		}
		var ch textCompletion
		if err := json.Unmarshal(data, &ch); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if ch.Object != "text_completion" {
			t.Errorf("event object %q, want text_completion", ch.Object)
		}
		switch {
		case ch.Usage != nil:
			usage = len(ch.Choices) == 0 && ch.Usage.CompletionTokens == 9
		case len(ch.Choices) == 1:
			text.WriteString(ch.Choices[0].Text)
			finished = finished || ch.Choices[0].FinishReason != nil
		default:
			t.Errorf("event %s: no choice and no usage", data)
		}
	}
	if text.String() != want || !finished || !usage {
		t.Errorf("streamed: text %q (want %q), finish reason seen %v, usage chunk with no choices %v", text.String(), want, finished, usage)
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
}

// A body the router cannot serve is refused before anything reaches the
// engines, with a message naming what is wrong.
func TestRouterRefusesBadTextCompletions(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"no prompt", map[string]any{"model": "m"}, "prompt: required"},
		{"two prompts", map[string]any{"prompt": []string{"a", "b"}}, "a list of 2 prompts"},
		{"token ids", map[string]any{"prompt": []int{1, 2, 3}}, "token ids are not accepted"},
		{"not text", map[string]any{"prompt": 7}, "must be a string or a list of one string"},
		{"two choices", map[string]any{"prompt": "x", "n": 2}, "n: 2 choices asked"},
	} {
		resp := postCompletion(t, c.Endpoint(), tc.body)
		var eb contract.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(eb.Error.Message, tc.want) {
			t.Errorf("%s: status %d, message %q; want 400 naming %q", tc.name, resp.StatusCode, eb.Error.Message, tc.want)
		}
	}
	if err := testkit.Drained(t.Context(), c); err != nil {
		t.Errorf("a refused body reached the engines: %v", err)
	}
}
