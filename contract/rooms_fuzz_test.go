package contract_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// FuzzRoomsResponse decodes any /debug/rooms body, as the harness does for
// an external target: no panic; what decodes re-encodes to JSON that
// decodes to the same value (encode(decode(encode(x))) == encode(x)).
func FuzzRoomsResponse(f *testing.F) {
	f.Add([]byte(`{"role":"decode","held":[{"room":42,"side":"decode","state":"Transferring","ranks":{"0":"Transferring","1":"WaitingForInput"},` +
		`"cleared":false,"last_state":"","events":[{"at":"2026-11-30T14:00:00.123456789Z","side":"decode","rank":0,"kind":"status","state":"Transferring","detail":"metadata sent"}],` +
		`"created":"2026-11-30T14:00:00Z","updated":"2026-11-30T14:00:01+01:00"}],"cleared":[]}`))
	f.Add([]byte(`{"role":"prefill","held":null,"cleared":[{"room":9223372036854775807,"state":"cleared","cleared":true,"last_state":"Failed","ranks":{}}]}`))
	f.Add([]byte(`{"held":[{"room":-1}]}`))
	f.Add([]byte(`{"held":[{"ranks":{"x":"Failed"}}]}`))
	f.Add([]byte(`{"held":[{"created":"not a time"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r contract.RoomsResponse
		if json.Unmarshal(in, &r) != nil {
			return
		}
		once, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", r, err)
		}
		var back contract.RoomsResponse
		if err := json.Unmarshal(once, &back); err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", once, err)
		}
		twice, err := json.Marshal(back)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the value:\n%s\n%s (%v)", once, twice, err)
		}
	})
}
