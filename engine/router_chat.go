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
	if err := readJSON(r, &cr); err != nil {
		writeError(w, http.StatusBadRequest, "decode chat completion body: "+err.Error())
		return
	}
	if len(cr.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages must not be empty")
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
	if maxTokens <= 0 {
		maxTokens = rt.cfg.MaxNewTokens
	}
	room := rt.room()
	if cr.BootstrapRoom != nil {
		room = *cr.BootstrapRoom
	}
	id := fmt.Sprintf("chatcmpl-%016x", room)
	rid := id
	if cr.Rid != "" {
		if len(cr.Rid) > maxRidLen {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("rid: %d bytes, longer than %d", len(cr.Rid), maxRidLen))
			return
		}
		rid = cr.Rid
	}
	// Decode streams only when the client does, as the model gateway
	// forwards the client's stream flag: a whole answer is one JSON value
	// instead of an event per token.
	req := contract.GenerateRequest{Rid: rid, Text: model.ChatPrompt(msgs), SamplingParams: contract.SamplingParams{MaxNewTokens: maxTokens},
		Stream: cr.Stream, BootstrapRoom: &room}
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
	base := chatResponse{ID: id, Created: time.Now().Unix(), Model: rt.cfg.Model}
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	var text string
	var meta contract.MetaInfo
	var upstreamErr *contract.ErrorDetail
	finished := false
	if cr.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		first := base
		first.Object = "chat.completion.chunk"
		first.Choices = []chatChoice{{Delta: &chatDelta{Role: "assistant"}}}
		send(first)
	}
	onEvent := func(data []byte) bool {
		var ev struct {
			contract.GenerateChunk
			Error *contract.ErrorDetail `json:"error"`
		}
		if json.Unmarshal(data, &ev) != nil {
			c.judge((*core.Legs).BadEvent)
			return true
		}
		if ev.Error != nil {
			c.judge(func(l *core.Legs) { l.DecodeError(true) })
			upstreamErr = ev.Error
			return false
		}
		delta := ev.Text[min(len(text), len(ev.Text)):]
		text, meta = ev.Text, ev.MetaInfo
		finished = ev.MetaInfo.FinishReason != nil
		if cr.Stream && delta != "" {
			chunk := base
			chunk.Object = "chat.completion.chunk"
			chunk.Choices = []chatChoice{{Delta: &chatDelta{Content: delta}}}
			c.wroteSome()
			send(chunk)
		}
		return true
	}
	if cr.Stream {
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
		if cr.Stream {
			send(contract.ErrorBody{Error: *upstreamErr})
		} else {
			writeError(w, http.StatusInternalServerError, upstreamErr.Message)
		}
		return
	}
	reason := "length"
	usage := &chatUsage{PromptTokens: meta.PromptTokens, CompletionTokens: meta.CompletionTokens, TotalTokens: meta.PromptTokens + meta.CompletionTokens}
	if cr.Stream {
		last := base
		last.Object = "chat.completion.chunk"
		last.Choices = []chatChoice{{Delta: &chatDelta{}, FinishReason: &reason}}
		send(last)
		if cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage {
			u := base
			u.Object = "chat.completion.chunk"
			u.Choices = []chatChoice{}
			u.Usage = usage
			send(u)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	base.Object = "chat.completion"
	base.Choices = []chatChoice{{Message: &chatDelta{Role: "assistant", Content: text}, FinishReason: &reason}}
	base.Usage = usage
	writeJSON(w, base)
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
