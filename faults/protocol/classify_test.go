package protocol

import (
	"encoding/binary"
	"testing"
)

// The frames below are written from the layouts of SGLang's NIXL and
// Mooncake connectors (main@2026 and older builds), not produced by the
// bundled engine's encoder, so the classifier is checked against SGLang.

// q packs uint64s as struct "Q" (little-endian on the hosts SGLang runs on).
func q(vs ...uint64) string {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return string(b)
}

// i32 packs int32 indices as a raw little-endian array.
func i32(vs ...uint32) string {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return string(b)
}

// plist packs byte strings as SGLang's packed list: u32 n, n u32 lengths,
// then the payloads; an empty list is "".
func plist(items ...string) string {
	if len(items) == 0 {
		return ""
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(items)))
	for _, it := range items {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(it)))
	}
	for _, it := range items {
		b = append(b, it...)
	}
	return string(b)
}

// Reference messages, one per layout and frame count.
func nixlRegistration() [][]byte {
	return msg(GuardFrame, "None", "10.1.2.3", "41235", "decode_agent_7f3a", "\x00opaque-nixl-agent-metadata\xff",
		q(0x7f0000000000, 0x7f0000100000), q(0x7e0000000000), plist(), "3", "8", "0", "147456",
		plist(), plist(), plist(), plist(), "2048", "VRAM", "")
}

func nixlTransferInfo(room string) [][]byte {
	return msg(GuardFrame, room, "10.1.2.3", "41235", "decode_agent_7f3a", i32(4, 5, 6), "17", "1", plist(), "0")
}

func mooncakeRegistration() [][]byte {
	return msg("None", "10.1.2.3", "41235", "10.1.2.3:17001", q(0x7f0000000000, 0x7f0000100000), q(0x7e0000000000),
		plist(q(0x7d0000000000)), "0", "8", "147456", plist(i32(64)), plist(i32(2, 32)), i32(0, 1), plist(i32(0)),
		q(0x7c0000000000), "1048576", "1", "0", q(1, 2))
}

func mooncakeTransferInfo(room string) [][]byte {
	return msg(room, "10.1.2.3", "41235", "10.1.2.3:17001", i32(4, 5, 6), "17", plist(i32(3)), "1", "0", i32(9))
}

func TestClassifyReferenceLayouts(t *testing.T) {
	t.Parallel()
	type want struct {
		kind    Kind
		room    uint64
		hasRoom bool
	}
	reg := want{KindRegistration, 0, false}
	meta := func(r uint64) want { return want{KindMetadata, r, true} }
	unknown := want{KindUnknown, 0, false}
	const big = "9223372036854775807"
	cases := []struct {
		name string
		in   [][]byte
		want want
	}{
		// NIXL
		{"nixl registration", nixlRegistration(), reg},
		{"nixl registration older", nixlRegistration()[:13], reg},
		{"nixl transferinfo", nixlTransferInfo(big), meta(9223372036854775807)},
		{"nixl kv_status", msg(KVStatusFrame, "42", "0", "1", "Aborted by AbortReq"), want{KindStatus, 42, true}},
		{"nixl kv_status without reason", msg(KVStatusFrame, "42", "0", "1"), want{KindStatus, 42, true}},
		{"nixl kv_status short", msg(KVStatusFrame, "42", "0"), unknown},
		{"nixl kv_status bad room", msg(KVStatusFrame, "x", "0", "1", "r"), unknown},
		{"guard only", msg(GuardFrame), unknown},
		{"guard junk room", msg(GuardFrame, "+1", "x"), unknown},
		// Mooncake
		{"mooncake registration", mooncakeRegistration(), reg},
		{"mooncake registration older 10", mooncakeRegistration()[:10], reg},
		{"mooncake registration 9 frames", mooncakeRegistration()[:9], unknown},
		{"mooncake transferinfo", mooncakeTransferInfo("77"), meta(77)},
		{"mooncake transferinfo 9", mooncakeTransferInfo("77")[:9], meta(77)},
		{"mooncake transferinfo 8", mooncakeTransferInfo("77")[:8], meta(77)},
		{"mooncake transferinfo dummy", msg("77", "10.1.2.3", "41235", "10.1.2.3:17001", "", "", "", "1", "0", ""), meta(77)},
		{"mooncake transferinfo 7", mooncakeTransferInfo("77")[:7], unknown},
		{"mooncake status", msg("12", "4", "0"), want{KindStatus, 12, true}},
		{"mooncake status failed", msg("12", "0", "3"), want{KindStatus, 12, true}},
		{"mooncake status with reason", msg("12", "0", "3", "Failed to send kv chunk"), want{KindStatus, 12, true}},
		{"mooncake status negative", msg("12", "-1", "0"), want{KindStatus, 12, true}},
		{"mooncake aux_data", msg(AuxDataFrame, "12", "0", "5", "\x00\x00\x00\x04", "data"), want{KindAux, 12, true}},
		{"room first, 5 frames", msg("12", "0", "3", "a", "b"), unknown},
		{"room first, 2 frames", msg("12", "4"), unknown},
		{"none alone", msg("None"), unknown},
		// Shared
		{"abort", msg(AbortFrame, "42", "10.1.2.3", "41235"), want{KindAbort, 42, true}},
		{"abort with a generation frame", msg(AbortFrame, "42", "10.1.2.3", "41235", "7"), want{KindAbort, 42, true}},
		{"abort with generation and token", msg(AbortFrame, "42", "10.1.2.3", "41235", "7", "tok-abc"), want{KindAbort, 42, true}},
		{"abort 3 frames", msg(AbortFrame, "42", "10.1.2.3"), unknown},
		{"abort bad room", msg(AbortFrame, "x", "10.1.2.3", "1"), unknown},
		{"abort_ack mooncake", msg(AbortAckFrame, "7"), want{KindAck, 7, true}},
		{"abort_ack deferred", msg(AbortAckFrame, "7", "1"), want{KindAck, 7, true}},
		{"abort_ack with token", msg(AbortAckFrame, "7", "tok-abc"), want{KindAck, 7, true}},
		{"abort_ack with rank and generation", msg(AbortAckFrame, "7", "1", "3"), want{KindAck, 7, true}},
		{"abort_ack no room", msg(AbortAckFrame), unknown},
		{"staging_req", msg("STAGING_REQ", "9", "0", "16", "10.1.2.3:17001"), want{KindStaging, 9, true}},
		{"staging_req with pp rank", msg("STAGING_REQ", "9", "0", "16", "10.1.2.3:17001", "1"), want{KindStaging, 9, true}},
		{"staging_rsp", msg("STAGING_RSP", "9", "0", "4096", "2", "0", "10.1.2.3:17001"), want{KindStaging, 9, true}},
		{"watermark", msg("WATERMARK", "2", "8192", "10.1.2.3:17001"), want{KindStaging, 0, false}},
		{"chunk_ready", msg("CHUNK_READY", "9", "0", "0", "16", "10.1.2.3:17001", "0"), want{KindStaging, 9, true}},
		// Junk
		{"empty", nil, unknown},
		{"one empty frame", msg(""), unknown},
		{"three words", msg("a", "b", "c"), unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, r, ok := Classify(tc.in)
			if (want{k, r, ok}) != tc.want {
				t.Fatalf("got %s %d %v, want %s %d %v", k, r, ok, tc.want.kind, tc.want.room, tc.want.hasRoom)
			}
		})
	}
}

// A rule never acts on a message of unknown layout unless it names
// KindUnknown: not an all-kinds rule, not a rule for another kind.
func TestRulesSkipUnknownUnlessNamed(t *testing.T) {
	t.Parallel()
	unknown := Message{Frames: msg("a", "b", "c"), Kind: KindUnknown}
	for _, tc := range []struct {
		name string
		rule Rule
		want bool
	}{
		{"all kinds", Rule{Action: ActDrop}, false},
		{"metadata", Rule{Kinds: []Kind{KindMetadata}, Action: ActDrop}, false},
		{"abort by predicate", Rule{Kinds: []Kind{KindAbort}, Match: func(Message) bool { return true }, Action: ActDrop}, false},
		{"named", Rule{Kinds: []Kind{KindMetadata, KindUnknown}, Action: ActDrop}, true},
	} {
		if got := tc.rule.matches(unknown); got != tc.want {
			t.Errorf("%s: matches unknown = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(&Rule{Action: ActDrop}).matches(Message{Kind: KindStatus}) {
		t.Error("an all-kinds rule must still match a known kind")
	}
}
