package engine

import (
	"strconv"

	"github.com/pdchaos/pdchaos/contract"
)

// appendGenerateChunk appends c as json.Marshal writes it, without
// reflection: decode writes one per token of a streamed answer, and prefill
// and decode one per plain answer. ok is false, with b as it was, when a
// string in c is not plain (plainJSON), for the caller to marshal c itself.
func appendGenerateChunk(b []byte, c contract.GenerateChunk) (_ []byte, ok bool) {
	m, f := c.MetaInfo, c.MetaInfo.FinishReason
	if !plainJSON(c.Text) || !plainJSON(m.ID) || (f != nil && (!plainJSON(f.Type) || !plainJSON(f.Message))) {
		return b, false
	}
	b = append(b, `{"text":"`...)
	b = append(b, c.Text...)
	b = append(b, `","meta_info":{"id":"`...)
	b = append(b, m.ID...)
	b = append(b, `","prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
	b = append(b, `,"finish_reason":`...)
	if f == nil {
		b = append(b, `null`...)
	} else {
		b = append(b, `{"type":"`...)
		b = append(b, f.Type...)
		b = append(b, '"')
		if f.Length != 0 {
			b = append(b, `,"length":`...)
			b = strconv.AppendInt(b, int64(f.Length), 10)
		}
		if f.Message != "" {
			b = append(b, `,"message":"`...)
			b = append(b, f.Message...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if m.BootstrapRoom != 0 {
		b = append(b, `,"bootstrap_room":`...)
		b = strconv.AppendUint(b, m.BootstrapRoom, 10)
	}
	return append(b, `}}`...), true
}

// plainJSON reports whether json.Marshal writes s as it is between its
// quotes: printable ASCII other than the quote, the backslash and the
// three characters it escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendDeltaChunk appends a.chunk(delta, nil), a streamed answer's piece
// as the router sends one per token, as json.Marshal writes it; ok is
// false, with b as it was, where a string in it is not plain.
func (a answerShape) appendDeltaChunk(b []byte, delta string) (_ []byte, ok bool) {
	if !plainJSON(a.id) || !plainJSON(a.model) || !plainJSON(delta) {
		return b, false
	}
	b = append(b, `{"id":"`...)
	b = append(b, a.id...)
	if a.chat {
		b = append(b, `","object":"chat.completion.chunk","created":`...)
	} else {
		b = append(b, `","object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"model":"`...)
	b = append(b, a.model...)
	if a.chat {
		b = append(b, `","choices":[{"index":0,"delta":{"content":"`...)
		b = append(b, delta...)
		b = append(b, `"},"finish_reason":null,"logprobs":null}]}`...)
	} else {
		b = append(b, `","choices":[{"index":0,"text":"`...)
		b = append(b, delta...)
		b = append(b, `","logprobs":null,"finish_reason":null}]}`...)
	}
	return b, true
}
