package protocol

import "testing"

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   [][]byte
		kind Kind
		room uint64
		ok   bool
	}{
		{"registration", msg(GuardFrame, "None", "127.0.0.1", "1", "agent"), KindRegistration, 0, true},
		{"metadata", metadata("9223372036854775807"), KindMetadata, 9223372036854775807, true},
		{"abort", abort("42"), KindAbort, 42, true},
		{"abort wrong frames", msg(AbortFrame, "42", "ip"), KindOther, 0, false},
		{"abort bad room", msg(AbortFrame, "x", "ip", "1"), KindOther, 0, false},
		{"ack", msg(AbortAckFrame, "7", "0"), KindAck, 7, true},
		{"legacy ack", msg(AbortAckFrame, "7"), KindAck, 7, true},
		{"status", msg("12", "4", "0"), KindStatus, 12, true},
		{"status failed negative", msg("12", "-1", "0"), KindStatus, 12, true},
		{"guard only", msg(GuardFrame), KindOther, 0, false},
		{"guard junk room", msg(GuardFrame, "+1", "x"), KindOther, 0, false},
		{"empty", nil, KindOther, 0, false},
		{"three words", msg("a", "b", "c"), KindOther, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, r, ok := Classify(tc.in)
			if k != tc.kind || r != tc.room || ok != tc.ok {
				t.Fatalf("got %s %d %v, want %s %d %v", k, r, ok, tc.kind, tc.room, tc.ok)
			}
		})
	}
}
