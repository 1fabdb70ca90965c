package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// checkChunk holds appendGenerateChunk to json.Marshal: the same bytes
// where it writes c, nothing appended where it does not.
func checkChunk(t *testing.T, c contract.GenerateChunk) bool {
	t.Helper()
	got, ok := appendGenerateChunk([]byte("prefix"), c)
	if !ok {
		if string(got) != "prefix" {
			t.Fatalf("appendGenerateChunk gave up on %+v but appended %q", c, got)
		}
		return false
	}
	want, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("appendGenerateChunk(%+v) = %s, json.Marshal gives %s", c, got[6:], want)
	}
	return true
}

func TestAppendGenerateChunkAsJSON(t *testing.T) {
	t.Parallel()
	written := 0
	for _, text := range []string{"", " the handler", "a\"b", `back\slash`, "<&>", "tab\t", "é", "\x7f", "~ !#$%'()*+,-./:;=?@[]^_`{|}"} {
		for _, f := range []*contract.FinishReason{nil, {Type: "length", Length: 16}, {Type: "stop"}, {Type: "abort", Message: "client gone"}, {Type: "x", Length: -3, Message: "<"}} {
			for _, n := range []int{0, 1, -7, math.MaxInt, math.MinInt} {
				for _, room := range []uint64{0, 171, math.MaxUint64} {
					c := contract.GenerateChunk{Text: text, MetaInfo: contract.MetaInfo{ID: "chatcmpl-" + text, PromptTokens: n, CompletionTokens: -n, FinishReason: f, BootstrapRoom: room}}
					if checkChunk(t, c) {
						written++
					}
				}
			}
		}
	}
	if written < 100 {
		t.Errorf("appendGenerateChunk wrote only %d chunks", written)
	}
}

func FuzzAppendGenerateChunk(f *testing.F) {
	f.Add(" the handler", "chatcmpl-1", 200, 3, true, "length", 16, "", uint64(171))
	f.Add("a<b", "", -1, 0, false, "", 0, "m", uint64(0))
	f.Fuzz(func(t *testing.T, text, id string, prompt, done int, finished bool, typ string, length int, msg string, room uint64) {
		c := contract.GenerateChunk{Text: text, MetaInfo: contract.MetaInfo{ID: id, PromptTokens: prompt, CompletionTokens: done, BootstrapRoom: room}}
		if finished {
			c.MetaInfo.FinishReason = &contract.FinishReason{Type: typ, Length: length, Message: msg}
		}
		checkChunk(t, c)
	})
}

// appendDeltaChunk writes what json.Marshal writes of the same chunk.
func TestAppendDeltaChunkAsJSON(t *testing.T) {
	t.Parallel()
	written := 0
	for _, chat := range []bool{true, false} {
		for _, delta := range []string{"", " the", "a\"b", "<", "é", "x\n"} {
			for _, model := range []string{"pdchaos-fake", "m&m"} {
				a := answerShape{chat: chat, id: "chatcmpl-00000000000000ab", created: -5, model: model}
				got, ok := a.appendDeltaChunk([]byte("p"), delta)
				if !ok {
					if string(got) != "p" {
						t.Fatalf("gave up on %q but appended %q", delta, got)
					}
					continue
				}
				written++
				want, _ := json.Marshal(a.chunk(delta, nil))
				if !bytes.Equal(got[1:], want) {
					t.Errorf("appendDeltaChunk(%q) = %s, json.Marshal gives %s", delta, got[1:], want)
				}
			}
		}
	}
	if written != 4 {
		t.Errorf("wrote %d chunks, want 4", written)
	}
}
