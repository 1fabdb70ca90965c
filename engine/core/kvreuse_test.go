package core

import (
	"bytes"
	"testing"

	"github.com/pdchaos/pdchaos/engine/model"
)

// Prefill's prompt KV reuses the prefix it shares with the last prompt and
// is model.PromptKV all the same: for a longer, a shorter, a diverging and
// an unrelated prompt, and the last prompt's KV is left as it was.
func TestPromptKVReuse(t *testing.T) {
	t.Parallel()
	p := NewPrefill(PrefillConfig{Ranks: 1, Workers: 1, PageSize: 16, ChunkPages: 1}, nil)
	sys := model.Tokenize(prompt(1, 300))
	long := append(append([]model.Token(nil), sys...), model.Tokenize(prompt(2, 50))...)
	other := append(append([]model.Token(nil), sys[:120]...), model.Tokenize(prompt(3, 90))...)
	var prev, prevKV []byte
	for i, toks := range [][]model.Token{sys, long, sys[:200], other, model.Tokenize(prompt(4, 10)), long} {
		got := p.promptKV(toks)
		if !bytes.Equal(got, model.PromptKV(toks)) {
			t.Fatalf("prompt %d (%d tokens): KV differs from model.PromptKV", i, len(toks))
		}
		if prev != nil && !bytes.Equal(prev, prevKV) {
			t.Fatalf("prompt %d: the previous prompt's KV was written over", i)
		}
		prev, prevKV = got, append([]byte(nil), got...)
	}
}
