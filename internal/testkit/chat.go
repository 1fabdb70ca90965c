package testkit

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

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/sse"
)

// ChatResult is what one streamed chat completion came back with; it is a
// value so that a test can pass it over a channel from a goroutine.
type ChatResult struct {
	// Text is the concatenated content of the answer.
	Text string
	// Room is the bootstrap room the router chose (its RoomHeader), 0 if
	// the answer carried none.
	Room uint64
	// Err says why the request failed: a non-200 status ("status 502:
	// ..."), an error event, or a stream that ended without [DONE].
	Err error
}

// Chat streams one chat completion of msgs through the router at endpoint
// and reads the answer with package sse. It uses a transport of its own,
// closed before it returns, so it leaves no goroutine for NoLeaks to find.
func Chat(ctx context.Context, endpoint string, msgs []model.Message, maxTokens int) ChatResult {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	body, err := json.Marshal(map[string]any{"model": "pdchaos", "messages": msgs, "max_tokens": maxTokens, "stream": true})
	if err != nil {
		return ChatResult{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+contract.PathChatCompletions, bytes.NewReader(body))
	if err != nil {
		return ChatResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return ChatResult{Err: err}
	}
	defer resp.Body.Close()
	room, _ := strconv.ParseUint(resp.Header.Get(contract.RoomHeader), 10, 64)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return ChatResult{Room: room, Err: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
	}
	text, err := readChat(resp.Body)
	return ChatResult{Text: text, Room: room, Err: err}
}

// readChat concatenates the content of a chat completion stream up to
// [DONE].
func readChat(body io.Reader) (string, error) {
	var out strings.Builder
	events := sse.NewReader(body, 0)
	for {
		data, err := events.Next()
		if errors.Is(err, io.EOF) {
			return out.String(), nil
		}
		if err != nil {
			return "", fmt.Errorf("read chat stream: %w", err)
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error *contract.ErrorDetail `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return "", fmt.Errorf("bad chat event %q: %w", data, err)
		}
		if ev.Error != nil {
			return "", fmt.Errorf("stream error: %s", ev.Error.Message)
		}
		for _, c := range ev.Choices {
			out.WriteString(c.Delta.Content)
		}
	}
}

// ChatExact runs one Chat and checks the answer is exactly the model's.
func ChatExact(ctx context.Context, endpoint string, msgs []model.Message, maxTokens int) error {
	r := Chat(ctx, endpoint, msgs, maxTokens)
	if r.Err != nil {
		return r.Err
	}
	if want := model.ExpectedChat(msgs, maxTokens); r.Text != want {
		return fmt.Errorf("room %d: answer %q, want %q", r.Room, r.Text, want)
	}
	return nil
}

// Generate sends SGLang /generate through the router at endpoint with a
// chosen rid and room and returns the answer text.
func Generate(ctx context.Context, endpoint, rid string, room uint64, text string, maxTokens int) (string, error) {
	body, err := json.Marshal(contract.GenerateRequest{Rid: rid, Text: text, BootstrapRoom: &room,
		SamplingParams: contract.SamplingParams{MaxNewTokens: maxTokens}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+contract.PathGenerate, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("generate %s: status %d: %s", rid, resp.StatusCode, b)
	}
	var out contract.GenerateChunk
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("generate %s: %w", rid, err)
	}
	return out.Text, nil
}
