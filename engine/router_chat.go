package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
)

type chatChoice struct {
	Index        int            `json:"index"`
	Delta        *chatDelta     `json:"delta,omitempty"`
	Message      *chatDelta     `json:"message,omitempty"`
	FinishReason *string        `json:"finish_reason"`
	Logprobs     map[string]any `json:"logprobs"`
}

type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// textChoice is a text completion's choice: the text itself, no message.
type textChoice struct {
	Index        int            `json:"index"`
	Text         string         `json:"text"`
	Logprobs     map[string]any `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
}

// textResponse is a text_completion object, whole or a streamed chunk.
type textResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []textChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

// maxRidLen bounds a client's rid: it is a map key on both engines and
// goes into every log line about the request.
const maxRidLen = 256

func (rt *Router) handleChat(w http.ResponseWriter, r *http.Request) {
	var cr chatRequest
	if err := readJSON(w, r, &cr); err != nil {
		badBody(w, "chat completion body", err)
		return
	}
	if len(cr.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages must not be empty")
		return
	}
	if cr.N > 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("n: %d choices asked; this engine answers one per request", cr.N))
		return
	}
	msgs := make([]model.Message, len(cr.Messages))
	for i, m := range cr.Messages {
		text, err := m.text()
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: %v", i, err))
			return
		}
		msgs[i] = model.Message{Role: m.Role, Content: text}
	}
	maxTokens := cr.MaxCompletionTokens
	if maxTokens <= 0 {
		maxTokens = cr.MaxTokens
	}
	rt.serveOpenAI(w, r, openAIJob{chat: true, prompt: model.ChatPrompt(msgs), maxTokens: maxTokens, stream: cr.Stream,
		includeUsage: cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage, rid: cr.Rid, room: cr.BootstrapRoom})
}

// handleCompletion serves OpenAI's text completions (/v1/completions), as
// SGLang's servers do beside chat: the prompt goes to the engines as it
// is, with no chat template.
func (rt *Router) handleCompletion(w http.ResponseWriter, r *http.Request) {
	var cr completionRequest
	if err := readJSON(w, r, &cr); err != nil {
		badBody(w, "completion body", err)
		return
	}
	prompt, err := cr.prompt()
	if err != nil {
		writeError(w, http.StatusBadRequest, "prompt: "+err.Error())
		return
	}
	if cr.N > 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("n: %d choices asked; this engine answers one per request", cr.N))
		return
	}
	rt.serveOpenAI(w, r, openAIJob{prompt: prompt, maxTokens: cr.MaxTokens, stream: cr.Stream,
		includeUsage: cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage, rid: cr.Rid, room: cr.BootstrapRoom})
}

// openAIJob is one OpenAI-style request, chat or text completion, as the
// router hands it to the engines and shapes their answer.
type openAIJob struct {
	chat         bool // chat.completion objects; else text_completion
	prompt       string
	maxTokens    int // 0: the engine's default
	stream       bool
	includeUsage bool
	rid          string  // "" : the answer's id
	room         *uint64 // nil: the router picks one
}

// serveOpenAI sends job to prefill and decode and writes decode's answer
// to the client in the job's OpenAI shape, streamed or whole.
func (rt *Router) serveOpenAI(w http.ResponseWriter, r *http.Request, job openAIJob) {
	maxTokens := job.maxTokens
	if maxTokens <= 0 {
		maxTokens = rt.cfg.MaxNewTokens
	}
	room := rt.room()
	if job.room != nil {
		room = *job.room
	}
	shape := answerShape{chat: job.chat, id: fmt.Sprintf("cmpl-%016x", room), created: time.Now().Unix(), model: rt.cfg.Model}
	if job.chat {
		shape.id = fmt.Sprintf("chatcmpl-%016x", room)
	}
	rid := shape.id
	if job.rid != "" {
		if len(job.rid) > maxRidLen {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("rid: %d bytes, longer than %d", len(job.rid), maxRidLen))
			return
		}
		rid = job.rid
	}
	// Decode streams only when the client does, as the model gateway
	// forwards the client's stream flag: a whole answer is one JSON value
	// instead of an event per token.
	req := contract.GenerateRequest{Rid: rid, Text: job.prompt, SamplingParams: contract.SamplingParams{MaxNewTokens: maxTokens},
		Stream: job.stream, BootstrapRoom: &room}
	resp, c, err := rt.dispatch(r, req)
	defer c.done()
	if err != nil {
		writeError(w, http.StatusBadGateway, "decode: "+err.Error())
		return
	}
	defer resp.Body.Close()
	w.Header().Set(contract.RoomHeader, strconv.FormatUint(room, 10))
	if resp.StatusCode != http.StatusOK {
		c.judge(func(l *core.Legs) { l.DecodeError(false) })
		var eb contract.ErrorBody
		if json.NewDecoder(resp.Body).Decode(&eb) != nil || eb.Error.Message == "" {
			eb.Error.Message = "decode answered " + resp.Status
		}
		writeError(w, resp.StatusCode, eb.Error.Message)
		return
	}
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	var text string
	var event []byte // a streamed piece's bytes, the buffer kept for the next
	var meta contract.MetaInfo
	var upstreamErr *contract.ErrorDetail
	finished := false
	if job.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		if job.chat {
			send(shape.roleChunk())
		}
	}
	onEvent := func(data []byte) bool {
		var ev core.DecodeEvent
		ok := false
		c.judge(func(l *core.Legs) { ev, ok = l.Event(data) })
		if !ok {
			return true
		}
		if ev.Error != nil {
			upstreamErr = ev.Error
			return false
		}
		delta := ev.Text[min(len(text), len(ev.Text)):]
		text, meta = ev.Text, ev.MetaInfo
		finished = ev.MetaInfo.FinishReason != nil
		if job.stream && delta != "" {
			c.wroteSome()
			// The piece as send writes it, without reflection where its
			// strings allow: one per token.
			ev := append(event[:0], "data: "...)
			if b, ok := shape.appendDeltaChunk(ev, delta); ok {
				event = append(b, "\n\n"...)
				_, _ = w.Write(event)
				if flusher != nil {
					flusher.Flush()
				}
			} else {
				send(shape.chunk(delta, nil))
			}
		}
		return true
	}
	if job.stream {
		err = readEvents(resp.Body, onEvent)
	} else {
		err = readAnswer(resp.Body, onEvent)
	}
	if err == nil {
		// Decode's stream has ended ([DONE] or an error event, after which
		// decode returns): read its last bytes too, or closing the body
		// drops the connection instead of keeping it for the next request.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyTail))
	}
	if r.Context().Err() != nil {
		c.clientGone() // why decode's stream was cut, whichever goroutine saw it first
	}
	early := false
	c.judge(func(l *core.Legs) { early = l.StreamEnded(finished, upstreamErr != nil) })
	if early {
		msg := "decode stream ended early"
		if err != nil {
			msg += ": " + err.Error()
		}
		upstreamErr = &contract.ErrorDetail{Message: msg, Type: "BadGateway", Code: http.StatusBadGateway}
	}
	if upstreamErr != nil {
		if job.stream {
			send(contract.ErrorBody{Error: *upstreamErr})
		} else {
			writeError(w, http.StatusInternalServerError, upstreamErr.Message)
		}
		return
	}
	reason := "length"
	usage := &chatUsage{PromptTokens: meta.PromptTokens, CompletionTokens: meta.CompletionTokens, TotalTokens: meta.PromptTokens + meta.CompletionTokens}
	if job.stream {
		send(shape.chunk("", &reason))
		if job.includeUsage {
			send(shape.usageChunk(usage))
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	writeJSON(w, shape.whole(text, &reason, usage))
}

// answerShape writes decode's answer as OpenAI's objects: chat.completion
// (and .chunk) for chat, text_completion for text completions (streamed
// chunks are text_completion objects too, as OpenAI's and SGLang's are).
type answerShape struct {
	chat    bool
	id      string
	created int64
	model   string
}

// roleChunk is a chat stream's first chunk, naming the speaker.
func (a answerShape) roleChunk() any {
	return chatResponse{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
		Choices: []chatChoice{{Delta: &chatDelta{Role: "assistant"}}}}
}

// chunk is a streamed piece of the answer; finish is set on the last.
func (a answerShape) chunk(delta string, finish *string) any {
	if a.chat {
		return chatResponse{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
			Choices: []chatChoice{{Delta: &chatDelta{Content: delta}, FinishReason: finish}}}
	}
	return textResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model,
		Choices: []textChoice{{Text: delta, FinishReason: finish}}}
}

// usageChunk is stream_options.include_usage's last chunk: no choices.
func (a answerShape) usageChunk(u *chatUsage) any {
	if a.chat {
		return chatResponse{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model, Choices: []chatChoice{}, Usage: u}
	}
	return textResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model, Choices: []textChoice{}, Usage: u}
}

// whole is the answer not streamed.
func (a answerShape) whole(text string, finish *string, u *chatUsage) any {
	if a.chat {
		return chatResponse{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
			Choices: []chatChoice{{Message: &chatDelta{Role: "assistant", Content: text}, FinishReason: finish}}, Usage: u}
	}
	return textResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model,
		Choices: []textChoice{{Text: text, FinishReason: finish}}, Usage: u}
}

// maxAnswerBody bounds a whole (not streamed) answer from decode.
const maxAnswerBody = 64 << 20

// readAnswer reads decode's whole answer to a request that did not stream
// and hands it to fn as the one event. A body cut short is the read error
// (fn is not called), as a broken stream is for readEvents.
func readAnswer(body io.Reader, fn func(data []byte) bool) error {
	b, err := io.ReadAll(io.LimitReader(body, maxAnswerBody))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		fn(b)
	}
	return nil
}
