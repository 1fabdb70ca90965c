package core

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// eventSamples are events as decode writes them (json.Marshal of a
// contract.GenerateChunk), with the strings and numbers most likely to
// trip a hand parser, and byte strings that are almost such events.
func eventSamples() [][]byte {
	var out [][]byte
	texts := []string{"", " hello", "a\"b", `back\slash`, "tab\there", "<&>", "é ✓ 😀", "\u2028", "\x7f", string([]byte{0xff, 'a'}), "line\nbreak"}
	nums := []int{0, 1, -1, 42, math.MaxInt, math.MinInt}
	finishes := []*contract.FinishReason{nil, {Type: "length", Length: 16}, {Type: "stop"}, {Type: "abort", Message: "client gone"}, {Type: "x", Length: -3, Message: "é"}}
	rooms := []uint64{0, 1, 1 << 62, math.MaxUint64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		c := contract.GenerateChunk{Text: texts[rng.IntN(len(texts))] + texts[rng.IntN(len(texts))], MetaInfo: contract.MetaInfo{
			ID: texts[rng.IntN(len(texts))], PromptTokens: nums[rng.IntN(len(nums))], CompletionTokens: nums[rng.IntN(len(nums))],
			FinishReason: finishes[rng.IntN(len(finishes))], BootstrapRoom: rooms[rng.IntN(len(rooms))]}}
		b, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":01,"completion_tokens":1,"finish_reason":null}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1.5,"completion_tokens":1,"finish_reason":null}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1e3,"completion_tokens":1,"finish_reason":null}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":9223372036854775808,"completion_tokens":1,"finish_reason":null}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":-9223372036854775808,"completion_tokens":-0,"finish_reason":null}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null,"bootstrap_room":18446744073709551616}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null,"bootstrap_room":-1}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null}} `,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null}}x`,
		"{\"text\":\"a\",\"meta_info\":{\"id\":\"x\",\"prompt_tokens\":1,\"completion_tokens\":1,\"finish_reason\":null}}\n",
		"{\"text\":\"a\",\"meta_info\":{\"id\":\"x\",\"prompt_tokens\":1,\"completion_tokens\":1,\"finish_reason\":null}} \t\r\n\v",
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":{"type":"length","length":2,"message":"m"}}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":{"type":"length","message":"m","length":2}}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":{}}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null},"error":{"message":"boom"}}`,
		`{"error":{"message":"boom","type":"InternalServerError","code":500}}`,
		`{"text":"a","meta_info":{"id":"x","prompt_tokens":1,"completion_tokens":1,"finish_reason":null`,
		`{"text":"a"}`, `not json`, ``, `null`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkEvent holds parseEvent to json.Unmarshal: where it reads an event
// it reads what json does, and json takes every event it reads.
func checkEvent(t *testing.T, data []byte) {
	t.Helper()
	got, ok := parseEvent(data)
	if !ok {
		return
	}
	var want DecodeEvent
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("parseEvent read %q, which json refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseEvent(%q) = %s, json gives %s", data, show(got), show(want))
	}
}

func show(ev DecodeEvent) string {
	return fmt.Sprintf("%+v finish=%+v", ev, ev.MetaInfo.FinishReason)
}

func TestParseEventAsJSON(t *testing.T) {
	t.Parallel()
	read := 0
	for _, data := range eventSamples() {
		checkEvent(t, data)
		if _, ok := parseEvent(data); ok {
			read++
		}
	}
	// Decode's plain events (no escapes) must take the fast path.
	for _, c := range []contract.GenerateChunk{
		{Text: " the handler", MetaInfo: contract.MetaInfo{ID: "chatcmpl-00000000000000ab", PromptTokens: 200, CompletionTokens: 3, BootstrapRoom: 171}},
		{Text: " done", MetaInfo: contract.MetaInfo{ID: "r", PromptTokens: 1, CompletionTokens: 16, FinishReason: &contract.FinishReason{Type: "length", Length: 16}}},
	} {
		b, _ := json.Marshal(c)
		b = append(b, '\n') // a whole answer ends in json.Encoder's newline; an event does not
		for _, b := range [][]byte{b[:len(b)-1], b} {
			if _, ok := parseEvent(b); !ok {
				t.Errorf("decode's event %q is not read by parseEvent", b)
			}
			checkEvent(t, b)
		}
	}
	if read < 20 { // most samples carry an escape on purpose
		t.Errorf("parseEvent read only %d of the samples", read)
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, data := range eventSamples() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkEvent(t, data) })
}
