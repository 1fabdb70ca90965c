package engine

import (
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/jsonlite"
)

// parseGenerateRequest reads a /generate body laid out exactly as the
// router writes it (json.Marshal of a contract.GenerateRequest) into g,
// which must be zero, without reflection: prefill and decode each read one
// per request, and json.Unmarshal of its ~1.5 KB prompt was 5% of the
// engine's CPU. It reports false, leaving g zero, for any other layout,
// which readJSON then leaves to encoding/json: where it reads a body, it
// reads what json.Unmarshal would.
func parseGenerateRequest(b []byte, g *contract.GenerateRequest) bool {
	var r contract.GenerateRequest
	c := jsonlite.Cursor{B: b}
	if !c.Lit(`{`) {
		return false
	}
	if c.Lit(`"rid":`) {
		if !c.Str(&r.Rid) || !c.Lit(`,`) {
			return false
		}
	}
	if !c.Lit(`"text":`) || !c.Str(&r.Text) || !c.Lit(`,"sampling_params":{`) {
		return false
	}
	if c.Lit(`"max_new_tokens":`) && !c.Int(&r.SamplingParams.MaxNewTokens) {
		return false
	}
	if !c.Lit(`},"stream":`) || !c.Bool(&r.Stream) {
		return false
	}
	if c.Lit(`,"bootstrap_host":`) && !c.Str(&r.BootstrapHost) {
		return false
	}
	if c.Lit(`,"bootstrap_port":`) && !c.Int(&r.BootstrapPort) {
		return false
	}
	if c.Lit(`,"bootstrap_room":`) {
		var room uint64
		if !c.Uint(&room) {
			return false
		}
		r.BootstrapRoom = &room
	}
	if !c.Lit(`}`) || !c.End() {
		return false
	}
	*g = r
	return true
}
