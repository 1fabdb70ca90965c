package engine_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// TestOfficialOpenAIClient talks to the router with OpenAI's own Go SDK,
// streaming and not, so the wire format is what real clients expect.
func TestOfficialOpenAIClient(t *testing.T) {
	client := officialClient(t)
	msgs := []model.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "rename the variable"}}
	params := openai.ChatCompletionNewParams{
		Model:     "pdchaos-fake",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(msgs[0].Content), openai.UserMessage(msgs[1].Content)},
		MaxTokens: openai.Int(9),
	}
	want := model.ExpectedChat(msgs, 9)

	resp, err := client.Chat.Completions.New(t.Context(), params)
	must(t, err)
	if got := resp.Choices[0].Message.Content; got != want {
		t.Errorf("non-streaming: got %q want %q", got, want)
	}
	if resp.Usage.CompletionTokens != 9 || resp.Choices[0].FinishReason != "length" {
		t.Errorf("non-streaming usage %+v finish %q", resp.Usage, resp.Choices[0].FinishReason)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	must(t, stream.Err())
	must(t, stream.Close())
	if got := acc.Choices[0].Message.Content; got != want {
		t.Errorf("streaming: got %q want %q", got, want)
	}
	if acc.Usage.CompletionTokens != 9 {
		t.Errorf("streaming usage %+v", acc.Usage)
	}
}

// TestOfficialOpenAIClientCompletionsAndModels: the same SDK's text
// completions (whole and streamed) and its model listing and lookup.
func TestOfficialOpenAIClientCompletionsAndModels(t *testing.T) {
	client := officialClient(t)
	const prompt = "// Package cache keeps"
	want := model.Expected(prompt, 7)
	params := openai.CompletionNewParams{
		Model:     "pdchaos-fake",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(7),
	}
	resp, err := client.Completions.New(t.Context(), params)
	must(t, err)
	if len(resp.Choices) != 1 || resp.Choices[0].Text != want || resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 7 {
		t.Errorf("completion: %+v, want one choice %q finished by length, 7 completion tokens", resp, want)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Completions.NewStreaming(t.Context(), params)
	var text string
	var usage int64
	for stream.Next() {
		ch := stream.Current()
		for _, choice := range ch.Choices {
			text += choice.Text
		}
		usage += ch.Usage.CompletionTokens
	}
	must(t, stream.Err())
	must(t, stream.Close())
	if text != want || usage != 7 {
		t.Errorf("streamed completion: %q with %d completion tokens, want %q with 7", text, usage, want)
	}

	models, err := client.Models.List(t.Context())
	must(t, err)
	if len(models.Data) != 1 || models.Data[0].ID != "pdchaos-fake" || models.Data[0].Created == 0 {
		t.Errorf("models: %+v, want pdchaos-fake with its created time", models.Data)
	}
	m, err := client.Models.Get(t.Context(), "pdchaos-fake")
	must(t, err)
	if m.ID != "pdchaos-fake" || m.Object != "model" {
		t.Errorf("model lookup: %+v", m)
	}
	if _, err := client.Models.Get(t.Context(), "gpt-5"); err == nil {
		t.Error("a model the engine does not serve was found")
	} else if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: %v, want a 404", err)
	}
}

// officialClient starts a cluster and returns OpenAI's Go SDK pointed at
// its router, with no retries (a retry would hide a failed first answer).
func officialClient(t *testing.T) openai.Client {
	t.Helper()
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(c.Endpoint()+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
}
