package enginetest_test

import (
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/faults/protocol"
)

// What the bundled engine's codec sends in each dialect is what the frame
// proxy's classifier expects: the kind, and the room where there is one.
func TestEngineEncodersClassify(t *testing.T) {
	t.Parallel()
	const room = 9223372036854775807
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			t.Parallel()
			d, err := core.NewDialect(w)
			if err != nil {
				t.Fatal(err)
			}
			kv := "127.0.0.1:17001"
			agent := d.AgentName("decode-17000-0-1", kv)
			cases := []struct {
				name    string
				frames  [][]byte
				kind    protocol.Kind
				hasRoom bool
			}{
				{"registration", d.Registration(core.Registration{DecodeIP: "127.0.0.1", DecodePort: 17000, AgentName: agent, KVAddr: kv, DecodeTP: 1, DstNumSlots: 1024}), protocol.KindRegistration, false},
				{"metadata", d.Metadata(core.Metadata{Room: room, DecodeIP: "127.0.0.1", DecodePort: 17000, AgentName: agent, Pages: []uint32{1, 2}, RequiredDst: 1}), protocol.KindMetadata, true},
				{"metadata without pages", d.Metadata(core.Metadata{Room: room, DecodeIP: "127.0.0.1", DecodePort: 17000, AgentName: agent, RequiredDst: 1}), protocol.KindMetadata, true},
				{"abort", d.Abort(core.Abort{Room: room, DecodeIP: "127.0.0.1", DecodePort: 17000}), protocol.KindAbort, true},
				{"abort ack", d.AbortAck(room, 1), protocol.KindAck, true},
				{"failed status", d.Status(room, core.Failed, 1, "bootstrap timeout"), protocol.KindStatus, true},
				{"success status", d.Status(room, core.Success, 0, ""), protocol.KindStatus, true},
			}
			for _, tc := range cases {
				kind, r, hasRoom := protocol.Classify(tc.frames)
				wantRoom := uint64(0)
				if tc.hasRoom {
					wantRoom = room
				}
				if kind != tc.kind || hasRoom != tc.hasRoom || r != wantRoom {
					t.Errorf("%s: classified %s room %d (%v), want %s room %d (%v)", tc.name, kind, r, hasRoom, tc.kind, wantRoom, tc.hasRoom)
				}
			}
		})
	}
}
