package contract_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// kvFrame builds a KV message with n pages, a payload and an agent.
func kvFrame(kind byte, pages uint32, payload []byte, agent string) []byte {
	h := make([]byte, contract.KVHeaderLen)
	h[0] = kind
	binary.BigEndian.PutUint64(h[1:], 77)
	binary.BigEndian.PutUint32(h[20:], pages)
	b := bytes.NewBuffer(h)
	b.Write(make([]byte, 4*pages))
	_ = binary.Write(b, binary.BigEndian, uint32(len(payload)))
	b.Write(payload)
	_ = binary.Write(b, binary.BigEndian, uint16(len(agent)))
	b.WriteString(agent)
	return b.Bytes()
}

// FuzzReadKVFrame reads any byte stream as a relay does: no panic; the raw
// bytes handed back, frame after frame and on the error that ends the
// stream, are exactly the bytes consumed, in order (a relay passes the
// stream on unchanged); memory stays within a small factor of the input,
// whatever sizes a header announces.
func FuzzReadKVFrame(f *testing.F) {
	f.Add(kvFrame(contract.KVKindChunk, 2, []byte("payload"), "decode-0"))
	f.Add(append(kvFrame(contract.KVKindChunk, 0, nil, ""), kvFrame(contract.KVKindAux, 0, nil, "a")...))
	f.Add(kvFrame(9, 0, nil, ""))
	f.Add(kvFrame(contract.KVKindChunk, contract.MaxKVPages+1, nil, "")[:contract.KVHeaderLen])
	big := kvFrame(contract.KVKindChunk, 0, nil, "")
	binary.BigEndian.PutUint32(big[contract.KVHeaderLen:], contract.MaxKVPayload)
	f.Add(big)
	f.Fuzz(func(t *testing.T, in []byte) {
		var out []byte
		var err error
		alloc := testkit.AllocatedBy(func() {
			r := bytes.NewReader(in)
			for {
				var raw []byte
				var h contract.KVHeader
				raw, h, err = contract.ReadKVFrame(r)
				out = append(out, raw...)
				if err != nil {
					return
				}
				if h.Kind != contract.KVKindChunk && h.Kind != contract.KVKindAux {
					t.Fatalf("frame of kind %d accepted", h.Kind)
				}
			}
		})
		if !bytes.Equal(out, in[:len(out)]) {
			t.Fatalf("raw bytes differ from the input they came from")
		}
		switch {
		case errors.Is(err, io.EOF):
			if len(out) != len(in) {
				t.Fatalf("clean EOF after %d of %d bytes", len(out), len(in))
			}
		case errors.Is(err, io.ErrUnexpectedEOF):
			if len(out) != len(in) {
				t.Fatalf("cut short after %d of %d bytes", len(out), len(in))
			}
		case !errors.Is(err, contract.ErrKVMalformed):
			t.Fatalf("error %v is neither EOF, a cut nor malformed", err)
		}
		if limit := uint64(16*len(in)) + 512<<10; alloc > limit {
			t.Fatalf("reading %d bytes allocated %d (limit %d)", len(in), alloc, limit)
		}
	})
}
