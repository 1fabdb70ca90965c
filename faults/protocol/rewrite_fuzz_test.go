package protocol

import (
	"errors"
	"testing"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

// FuzzRewriteDecodeAddr rewrites decode's address in any message, seeded
// with every layout that carries one: no panic; a message is either
// rewritten, left alone because its kind carries no address, or refused
// with ErrNotRewritable; a rewritten message keeps its kind and room (so
// rules and the peer read it as before) and carries exactly the new
// address; the input is never changed in place.
func FuzzRewriteDecodeAddr(f *testing.F) {
	for _, s := range [][][]byte{
		nixlRegistration(), nixlTransferInfo("42"), mooncakeRegistration(), mooncakeRegistration()[:10],
		mooncakeTransferInfo("77"), mooncakeTransferInfo("77")[:8],
		msg(AbortFrame, "42", "10.1.2.3", "41235"), msg(AbortFrame, "42", "10.1.2.3", "41235", "7", "tok"),
		msg(AbortAckFrame, "7", "1"), msg("12", "4", "0"), msg("HELLO", "a", "1"), msg(GuardFrame, "1", "ip", "port"), nil,
	} {
		f.Add(testkit.JoinFrames(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		frames := testkit.SplitFrames(in)
		before := string(testkit.JoinFrames(frames))
		kind, room, hasRoom := Classify(frames)
		out, changed, err := RewriteDecodeAddr(Message{Frames: frames, Kind: kind, Room: room, HasRoom: hasRoom},
			func(string) (string, error) { return "127.0.0.1:9", nil })
		if string(testkit.JoinFrames(frames)) != before {
			t.Fatal("the input message was changed in place")
		}
		switch {
		case err != nil:
			if !errors.Is(err, ErrNotRewritable) || changed {
				t.Fatalf("%s: err %v (changed %v), want ErrNotRewritable", kind, err, changed)
			}
			return
		case !changed:
			if kind == KindRegistration || kind == KindMetadata || kind == KindAbort || kind == KindUnknown {
				t.Fatalf("%s left unchanged without an error", kind)
			}
			return
		}
		k2, r2, h2 := Classify(out)
		if k2 != kind || r2 != room || h2 != hasRoom {
			t.Fatalf("rewritten %s room %d became %s room %d", kind, room, k2, r2)
		}
		ipAt, portAt, _, err := DecodeAddrAt(Message{Frames: out, Kind: k2})
		if err != nil || string(out[ipAt]) != "127.0.0.1" || string(out[portAt]) != "9" {
			t.Fatalf("rewritten %s carries %q:%q (%v)", kind, out[ipAt], out[portAt], err)
		}
	})
}
