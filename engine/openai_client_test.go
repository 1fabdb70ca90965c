package engine_test

import (
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
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := openai.NewClient(option.WithBaseURL(c.Endpoint()+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
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
