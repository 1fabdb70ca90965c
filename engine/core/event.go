package core

import (
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/jsonlite"
)

// parseEvent reads one event of decode's answer laid out exactly as
// decode writes it (json.Marshal of a contract.GenerateChunk: its fields in
// order, no space) without reflection, through internal/jsonlite, as the
// runtime reads /generate bodies: the router reads one per token, and a
// whole answer as one. ok is false for anything else, which is then left
// to json.Unmarshal; where ok is true, ev is what json.Unmarshal gives.
func parseEvent(data []byte) (ev DecodeEvent, ok bool) {
	p := jsonlite.Cursor{B: data}
	m := &ev.MetaInfo
	if !p.Lit(`{"text":`) || !p.Str(&ev.Text) ||
		!p.Lit(`,"meta_info":{"id":`) || !p.Str(&m.ID) ||
		!p.Lit(`,"prompt_tokens":`) || !p.Int(&m.PromptTokens) ||
		!p.Lit(`,"completion_tokens":`) || !p.Int(&m.CompletionTokens) ||
		!p.Lit(`,"finish_reason":`) {
		return DecodeEvent{}, false
	}
	if !p.Lit(`null`) {
		f := &contract.FinishReason{}
		if !p.Lit(`{"type":`) || !p.Str(&f.Type) {
			return DecodeEvent{}, false
		}
		if p.Lit(`,"length":`) && !p.Int(&f.Length) {
			return DecodeEvent{}, false
		}
		if p.Lit(`,"message":`) && !p.Str(&f.Message) {
			return DecodeEvent{}, false
		}
		if !p.Lit(`}`) {
			return DecodeEvent{}, false
		}
		m.FinishReason = f
	}
	if p.Lit(`,"bootstrap_room":`) && !p.Uint(&m.BootstrapRoom) {
		return DecodeEvent{}, false
	}
	if !p.Lit(`}}`) {
		return DecodeEvent{}, false
	}
	for p.I < len(p.B) && (p.B[p.I] == ' ' || p.B[p.I] == '\t' || p.B[p.I] == '\n' || p.B[p.I] == '\r') {
		p.I++ // json's trailing whitespace (a whole answer ends in json.Encoder's newline)
	}
	if !p.End() {
		return DecodeEvent{}, false
	}
	return ev, true
}
