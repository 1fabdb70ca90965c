package core

import (
	"math"
	"unicode/utf8"

	"github.com/pdchaos/pdchaos/contract"
)

// parseEvent reads one event of decode's answer laid out exactly as
// decode writes it (json.Marshal of a contract.GenerateChunk: its fields in
// order, no space, no escape in any string) without reflection: the router
// reads one per token, and a whole answer as one. ok is false for anything else, which is then left
// to json.Unmarshal; where ok is true, ev is what json.Unmarshal gives.
func parseEvent(data []byte) (ev DecodeEvent, ok bool) {
	p := eventParser{b: data}
	m := &ev.MetaInfo
	if !p.lit(`{"text":`) || !p.str(&ev.Text) ||
		!p.lit(`,"meta_info":{"id":`) || !p.str(&m.ID) ||
		!p.lit(`,"prompt_tokens":`) || !p.int(&m.PromptTokens) ||
		!p.lit(`,"completion_tokens":`) || !p.int(&m.CompletionTokens) ||
		!p.lit(`,"finish_reason":`) {
		return DecodeEvent{}, false
	}
	if !p.lit(`null`) {
		f := &contract.FinishReason{}
		if !p.lit(`{"type":`) || !p.str(&f.Type) {
			return DecodeEvent{}, false
		}
		if p.lit(`,"length":`) && !p.int(&f.Length) {
			return DecodeEvent{}, false
		}
		if p.lit(`,"message":`) && !p.str(&f.Message) {
			return DecodeEvent{}, false
		}
		if !p.lit(`}`) {
			return DecodeEvent{}, false
		}
		m.FinishReason = f
	}
	if p.lit(`,"bootstrap_room":`) && !p.uint(&m.BootstrapRoom) {
		return DecodeEvent{}, false
	}
	if !p.lit(`}}`) {
		return DecodeEvent{}, false
	}
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++ // json's trailing whitespace (a whole answer ends in json.Encoder's newline)
	}
	if p.i != len(p.b) {
		return DecodeEvent{}, false
	}
	return ev, true
}

// eventParser is parseEvent's cursor over the event's bytes.
type eventParser struct {
	b []byte
	i int
}

// lit consumes s if the bytes at the cursor are s.
func (p *eventParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a JSON string that needs no unescaping: valid UTF-8 with no
// backslash and no control character.
func (p *eventParser) str(dst *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !utf8.Valid(s) {
				return false
			}
			*dst = string(s)
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// digits reads the JSON integer at the cursor (a minus, where neg is
// allowed, then 0 or a digit run with no leading zero) as a sign and a
// magnitude; false for anything else, or a magnitude over max.
func (p *eventParser) digits(neg bool, max uint64) (minus bool, n uint64, ok bool) {
	j := p.i
	if neg && j < len(p.b) && p.b[j] == '-' {
		minus = true
		j++
	}
	d := j
	for ; j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9'; j++ {
		v := uint64(p.b[j] - '0')
		if n > (max-v)/10 {
			return false, 0, false
		}
		n = n*10 + v
	}
	if j == d || (p.b[d] == '0' && j-d > 1) {
		return false, 0, false
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') {
		return false, 0, false // not an integer: json decides
	}
	p.i = j
	return minus, n, true
}

// int reads an int (json refuses one out of range: so does this).
func (p *eventParser) int(dst *int) bool {
	minus, n, ok := p.digits(true, math.MaxInt+1)
	if !ok || (!minus && n > math.MaxInt) {
		return false
	}
	if minus {
		*dst = int(-n) // two's complement: -(MaxInt+1) is MinInt
	} else {
		*dst = int(n)
	}
	return true
}

// uint reads a uint64.
func (p *eventParser) uint(dst *uint64) bool {
	_, n, ok := p.digits(false, math.MaxUint64)
	if ok {
		*dst = n
	}
	return ok
}
