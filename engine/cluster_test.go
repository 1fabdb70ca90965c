package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/clustertest"
	"github.com/pdchaos/pdchaos/engine/model"
	"go.uber.org/goleak"
)

// noLeaks registers the goroutine check first, so it runs after every
// other cleanup (the cluster's Close included).
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func startCluster(t *testing.T, cfg engine.Config) *engine.Cluster { return clustertest.Start(t, cfg) }

// chat streams one chat completion and returns the concatenated content.
func chat(ctx context.Context, client *http.Client, endpoint string, msgs []model.Message, maxTokens int) (string, error) {
	body, _ := json.Marshal(map[string]any{"model": "pdchaos-fake", "messages": msgs, "max_tokens": maxTokens, "stream": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if line == "" || line == sc.Text() {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return "", err
		}
		if ev.Error != nil {
			return "", fmt.Errorf("stream error: %s", ev.Error.Message)
		}
		for _, c := range ev.Choices {
			out.WriteString(c.Delta.Content)
		}
	}
	if !done {
		return "", fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
	}
	return out.String(), nil
}

func TestClusterStreamsExpectedAnswer(t *testing.T) {
	noLeaks(t)
	c := startCluster(t, engine.Config{})
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	msgs := []model.Message{{Role: "system", Content: strings.Repeat("you are a careful coding agent ", 40)}, {Role: "user", Content: "fix the bug in main.go"}}
	got, err := chat(t.Context(), client, c.Endpoint(), msgs, 24)
	if err != nil {
		t.Fatal(err)
	}
	if want := model.ExpectedChat(msgs, 24); got != want {
		t.Fatalf("answer mismatch\n got %q\nwant %q", got, want)
	}
}
