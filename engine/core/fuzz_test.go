package core

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// The layouts of sglang-wire.md, written by hand (not by our encoders), as
// fuzz seeds: NIXL and Mooncake registrations and TransferInfos with the
// old and new frame counts, ABORT, ABORT_ACK and both status notices.
func seedMessages() [][][]byte {
	q := func(v uint64) string { return string(binary.LittleEndian.AppendUint64(nil, v)) }
	i32 := func(vs ...uint32) string {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return string(b)
	}
	nixlReg := frames(Guard, TagNone, "10.1.2.3", "41235", "decode_agent_7f3a", "kv=10.1.2.3:17001",
		q(0x7f0000000000), q(0x7e0000000000), "", "3", "8", "0", "147456", "", "", "", "", "2048", "VRAM", "")
	moonReg := frames(TagNone, "10.1.2.3", "41235", "10.1.2.3:17001", q(0x7f0000000000), q(0x7e0000000000), "",
		"0", "8", "147456", "", "", i32(0, 1), "", q(0x7c0000000000), "1048576", "1", "0", q(1))
	moonMeta := frames("77", "10.1.2.3", "41235", "10.1.2.3:17001", i32(4, 5, 6), "17", "", "1", "0", i32(9))
	return [][][]byte{
		nixlReg, nixlReg[:18],
		frames(Guard, "42", "10.1.2.3", "41235", "decode_agent_7f3a", i32(4, 5, 6), "17", "1", "", "0"),
		moonReg, moonReg[:10],
		moonMeta, moonMeta[:9], moonMeta[:8],
		frames("77", "10.1.2.3", "41235", "10.1.2.3:17001", "", "", "", "1", "0", ""),
		frames(TagAbort, "42", "10.1.2.3", "41235"),
		frames(TagAbort, "42", "10.1.2.3", "41235", "7", "tok-abc"),
		frames(TagAbortAck, "7"), frames(TagAbortAck, "7", "1"), frames(TagAbortAck, "7", "1", "3"),
		frames(TagKVStatus, "42", "0", "1", "Aborted by AbortReq"), frames(TagKVStatus, "42", "0", "1"),
		frames("12", "4", "0"), frames("12", "0", "3", "Failed to send kv chunk"),
		frames("12", "-1", "0"), frames(Guard), nil,
	}
}

var wires = []contract.Wire{contract.WireNIXL, contract.WireMooncake}

func addSeeds(f *testing.F) {
	for _, m := range seedMessages() {
		for i := range wires {
			f.Add(uint8(i), testkit.JoinFrames(m))
		}
	}
}

// normPages makes an empty page list nil, which is how the parsers return
// one; the encoders write both the same.
func normPages(p []uint32) []uint32 {
	if len(p) == 0 {
		return nil
	}
	return p
}

func (d Dialect) encodeControl(c Control) [][]byte {
	switch c.Kind {
	case MsgRegistration:
		return d.Registration(c.Registration)
	case MsgMetadata:
		return d.Metadata(c.Metadata)
	case MsgAbort:
		return d.Abort(c.Abort)
	}
	return nil
}

func (d Dialect) encodeNotice(n Notice) [][]byte {
	if n.Kind == MsgAbortAck {
		return d.AbortAck(n.Room, n.Rank)
	}
	return d.Status(n.Room, n.Status, n.Rank, n.Reason)
}

// FuzzParseControl feeds prefill's bootstrap loop parser any message, in
// either dialect: no panic; an error wraps ErrMalformed; what parses
// encodes to a message that parses to the same value; and the protocol
// proxy's classifier agrees on what it is, so a fault rule for metadata or
// ABORTs sees every message the engine acts on as one.
func FuzzParseControl(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, w uint8, in []byte) {
		d := dialectOf(wires[int(w)%len(wires)])
		msg := testkit.SplitFrames(in)
		c, err := d.ParseControl(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: error does not wrap ErrMalformed: %v", d.Wire(), err)
			}
			return
		}
		c.Metadata.Pages = normPages(c.Metadata.Pages)
		back, err := d.ParseControl(d.encodeControl(c))
		back.Metadata.Pages = normPages(back.Metadata.Pages)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%s: %+v re-encoded parses as %+v (%v)", d.Wire(), c, back, err)
		}
		kind, room, hasRoom := protocol.Classify(msg)
		want := map[MsgKind]protocol.Kind{MsgRegistration: protocol.KindRegistration, MsgMetadata: protocol.KindMetadata, MsgAbort: protocol.KindAbort}[c.Kind]
		wantRoom := map[MsgKind]uint64{MsgMetadata: c.Metadata.Room, MsgAbort: c.Abort.Room}[c.Kind]
		if kind != want || room != wantRoom || hasRoom != (c.Kind != MsgRegistration) {
			t.Fatalf("%s: engine parses %q as %+v, classifier says %s room %d (%v)", d.Wire(), msg, c, kind, room, hasRoom)
		}
	})
}

// FuzzParseNotice is FuzzParseControl for decode's notify loop: ABORT_ACK
// and status notices.
func FuzzParseNotice(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, w uint8, in []byte) {
		d := dialectOf(wires[int(w)%len(wires)])
		msg := testkit.SplitFrames(in)
		n, err := d.ParseNotice(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: error does not wrap ErrMalformed: %v", d.Wire(), err)
			}
			return
		}
		if n.Kind == MsgStatus && (n.Status < Failed || n.Status > Success) {
			t.Fatalf("%s: status %d accepted", d.Wire(), n.Status)
		}
		if d.Wire() == contract.WireMooncake {
			n.Reason = "" // Mooncake's status encoder writes 3 frames, no reason
		}
		back, err := d.ParseNotice(d.encodeNotice(n))
		if err != nil || back != n {
			t.Fatalf("%s: %+v re-encoded parses as %+v (%v)", d.Wire(), n, back, err)
		}
		kind, room, _ := protocol.Classify(msg)
		want := map[MsgKind]protocol.Kind{MsgAbortAck: protocol.KindAck, MsgStatus: protocol.KindStatus}[n.Kind]
		if kind != want || room != n.Room {
			t.Fatalf("%s: engine parses %q as %+v, classifier says %s room %d", d.Wire(), msg, n, kind, room)
		}
	})
}

// FuzzEncodeControl builds values, encodes them in either dialect and
// parses them back: parse(encode(v)) == v for every value the dialect can
// carry (Mooncake names an agent by its KV address "ip:port" and has no
// dst_num_slots).
func FuzzEncodeControl(f *testing.F) {
	f.Add(uint8(0), uint64(42), "10.1.2.3", uint16(41235), "decode-1", "10.1.2.3:17001", []byte{4, 0, 0, 0}, 17, 1, 0, uint16(2), uint16(1), uint16(2048), uint8(0), "reason", false)
	f.Add(uint8(1), uint64(1<<63-1), "::1", uint16(1), "10.1.2.3:17001", "10.1.2.3:17001", []byte{}, -1, 2, 64, uint16(8), uint16(7), uint16(0), uint8(4), "", true)
	f.Fuzz(func(t *testing.T, w uint8, room uint64, ip string, port uint16, agent, kvAddr string, pages []byte,
		aux, required, prefix int, tp16, rank16, slots16 uint16, status uint8, reason string, ackNoRank bool) {
		tp, rank, slots := int(tp16), int(rank16), int(slots16)
		d := dialectOf(wires[int(w)%len(wires)])
		moon := d.Wire() == contract.WireMooncake
		if moon {
			if !strings.Contains(kvAddr, ":") {
				kvAddr += ":1"
			}
			agent, slots = kvAddr, 0
		}
		var pg []uint32
		for i := 0; i+4 <= len(pages); i += 4 {
			pg = append(pg, binary.LittleEndian.Uint32(pages[i:]))
		}
		vals := []Control{
			{Kind: MsgRegistration, Registration: Registration{DecodeIP: ip, DecodePort: int(port), AgentName: agent, KVAddr: kvAddr, DecodeTP: tp, DecodeRank: rank, DstNumSlots: slots}},
			{Kind: MsgMetadata, Metadata: Metadata{Room: room, DecodeIP: ip, DecodePort: int(port), AgentName: agent, Pages: pg, AuxIndex: aux, RequiredDst: required, PrefixLen: prefix}},
			{Kind: MsgAbort, Abort: Abort{Room: room, DecodeIP: ip, DecodePort: int(port)}},
		}
		for _, v := range vals {
			got, err := d.ParseControl(d.encodeControl(v))
			got.Metadata.Pages = normPages(got.Metadata.Pages)
			if err != nil || !reflect.DeepEqual(got, v) {
				t.Fatalf("%s: %+v encoded parses as %+v (%v)", d.Wire(), v, got, err)
			}
		}
		if moon {
			reason = ""
		}
		ackRank := rank
		if ackNoRank {
			ackRank = -1 // a 2-frame ABORT_ACK names no rank
		}
		for _, n := range []Notice{
			{Kind: MsgAbortAck, Room: room, Status: Failed, Rank: ackRank},
			{Kind: MsgStatus, Room: room, Status: KVPoll(int(status) % (int(Success) + 1)), Rank: rank, Reason: reason},
		} {
			got, err := d.ParseNotice(d.encodeNotice(n))
			if err != nil || got != n {
				t.Fatalf("%s: %+v encoded parses as %+v (%v)", d.Wire(), n, got, err)
			}
		}
	})
}
