package engine

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

func genreqSamples(t testing.TB) [][]byte {
	var out [][]byte
	room, zero, big := uint64(171), uint64(0), uint64(math.MaxUint64)
	prompt := model.ChatPrompt([]model.Message{{Role: "user", Content: "refactor the handler <&> \"now\"\tplease é ✓"}})
	for _, r := range []contract.GenerateRequest{
		{Rid: "chatcmpl-00000000000000ab", Text: prompt, SamplingParams: contract.SamplingParams{MaxNewTokens: 16}, BootstrapHost: "127.0.0.1", BootstrapPort: 4321, BootstrapRoom: &room},
		{Text: "plain", Stream: true, BootstrapRoom: &zero},
		{Rid: "r", Text: "", SamplingParams: contract.SamplingParams{MaxNewTokens: -1}, BootstrapPort: math.MinInt, BootstrapRoom: &big},
		{Text: "\u2028\x00\x1f" + string([]byte{0xff})},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		`{"text":"a","sampling_params":{},"stream":false}`,
		`{"text":"a","sampling_params":{},"stream":false} `,
		`{"text":"a","sampling_params":{},"stream":false,"extra":1}`,
		`{"text":"a","sampling_params":{"max_new_tokens":1.0},"stream":false}`,
		`{"text":"a","sampling_params":{},"stream":false,"bootstrap_room":null}`,
		`{"text":"a","sampling_params":{},"stream":false,"bootstrap_room":-1}`,
		`{"Text":"a","sampling_params":{},"stream":false}`,
		`{"stream":true,"text":"a","sampling_params":{}}`,
		`{"text":"\ud83d\ude00","sampling_params":{},"stream":false}`,
		`{"text":"a","sampling_params":{},"stream":false}{}`,
		`{}`, `null`, ``,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkGenreq holds parseGenerateRequest to json.Unmarshal: where it reads
// a body it reads what json does; where it does not, it leaves g zero.
func checkGenreq(t *testing.T, b []byte) {
	t.Helper()
	var got contract.GenerateRequest
	if !parseGenerateRequest(b, &got) {
		if !reflect.DeepEqual(got, contract.GenerateRequest{}) {
			t.Fatalf("parseGenerateRequest gave up on %q but changed g: %+v", b, got)
		}
		return
	}
	var want contract.GenerateRequest
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("parseGenerateRequest read %q, which json refuses: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseGenerateRequest(%q) = %+v, json gives %+v", b, got, want)
	}
}

func TestParseGenerateRequestAsJSON(t *testing.T) {
	t.Parallel()
	samples := genreqSamples(t)
	for _, b := range samples {
		checkGenreq(t, b)
	}
	// What the router sends must take the fast path.
	for _, b := range samples[:3] {
		var g contract.GenerateRequest
		if !parseGenerateRequest(b, &g) {
			t.Errorf("the router's body %s is not read by parseGenerateRequest", b)
		}
	}
}

func FuzzParseGenerateRequest(f *testing.F) {
	for _, b := range genreqSamples(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkGenreq(t, b) })
}
