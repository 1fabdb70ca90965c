package core

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

func frames(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// Every dialect parses what it encodes, and the layouts are the ones of
// SGLang's connectors: frame counts and what leads.
func TestDialectRoundTrip(t *testing.T) {
	t.Parallel()
	type layout struct {
		reg, meta, status int
		regLead, metaLead string
		statusLead        string
	}
	want := map[contract.Wire]layout{
		contract.WireNIXL:     {reg: 20, meta: 10, status: 5, regLead: Guard, metaLead: Guard, statusLead: TagKVStatus},
		contract.WireMooncake: {reg: 19, meta: 10, status: 3, regLead: TagNone, metaLead: "77", statusLead: "77"},
	}
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			t.Parallel()
			d, err := NewDialect(w)
			if err != nil || d.Wire() != w {
				t.Fatalf("NewDialect(%s) = %v, %v", w, d.Wire(), err)
			}
			lw := want[w]
			kv := "10.0.0.2:9200"
			agent := d.AgentName("decode-9200-0-abc", kv)
			reg := Registration{DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: agent, KVAddr: kv, DecodeTP: 2, DecodeRank: 1, DstNumSlots: 64}
			f := d.Registration(reg)
			if len(f) != lw.reg || string(f[0]) != lw.regLead {
				t.Errorf("registration %d frames led by %q, want %d led by %q", len(f), f[0], lw.reg, lw.regLead)
			}
			c, err := d.ParseControl(f)
			if w == contract.WireMooncake {
				reg.DstNumSlots = 0 // not on Mooncake's wire
			}
			if err != nil || c.Kind != MsgRegistration || c.Registration != reg {
				t.Errorf("registration parsed %+v %v, want %+v", c.Registration, err, reg)
			}
			m := Metadata{Room: 77, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: agent, Pages: []uint32{3, 1 << 20}, AuxIndex: 2, RequiredDst: 1, PrefixLen: 5}
			f = d.Metadata(m)
			if len(f) != lw.meta || string(f[0]) != lw.metaLead {
				t.Errorf("metadata %d frames led by %q, want %d led by %q", len(f), f[0], lw.meta, lw.metaLead)
			}
			if c, err = d.ParseControl(f); err != nil || c.Kind != MsgMetadata || !reflect.DeepEqual(c.Metadata, m) {
				t.Errorf("metadata parsed %+v %v, want %+v", c.Metadata, err, m)
			}
			a := Abort{Room: 77, DecodeIP: "10.0.0.2", DecodePort: 9100}
			f = d.Abort(a)
			if len(f) != 4 || string(f[0]) != TagAbort {
				t.Errorf("ABORT %q, want 4 frames", f)
			}
			if c, err = d.ParseControl(f); err != nil || c.Kind != MsgAbort || c.Abort != a {
				t.Errorf("ABORT parsed %+v %v", c, err)
			}
			f = d.AbortAck(77, 1)
			if len(f) != 3 || string(f[0]) != TagAbortAck {
				t.Errorf("ABORT_ACK %q, want 3 frames", f)
			}
			if n, err := d.ParseNotice(f); err != nil || n != (Notice{Kind: MsgAbortAck, Room: 77, Status: Failed, Rank: 1}) {
				t.Errorf("ABORT_ACK parsed %+v %v", n, err)
			}
			f = d.Status(77, Failed, 1, "bootstrap timeout")
			if len(f) != lw.status || string(f[0]) != lw.statusLead {
				t.Errorf("status %q, want %d frames led by %q", f, lw.status, lw.statusLead)
			}
			n, err := d.ParseNotice(f)
			if err != nil || n.Kind != MsgStatus || n.Room != 77 || n.Status != Failed || n.Rank != 1 {
				t.Errorf("status parsed %+v %v", n, err)
			}
			if w == contract.WireNIXL && n.Reason != "bootstrap timeout" {
				t.Errorf("NIXL status reason %q", n.Reason)
			}
		})
	}
}

// What older or newer real peers send is accepted: ABORT with trailing
// frames, a 2-frame ABORT_ACK, Mooncake's shorter registration and
// TransferInfo, a Mooncake status with a reason frame.
func TestDialectAcceptsPeerVariants(t *testing.T) {
	t.Parallel()
	nixl, moon := dialectOf(contract.WireNIXL), dialectOf(contract.WireMooncake)
	for _, d := range []Dialect{nixl, moon} {
		c, err := d.ParseControl(frames(TagAbort, "9", "10.0.0.2", "9100", "gen-3", "token"))
		if err != nil || c.Kind != MsgAbort || c.Abort.Room != 9 || c.Abort.DecodePort != 9100 {
			t.Errorf("%s: ABORT with trailing frames: %+v %v", d.Wire(), c, err)
		}
		n, err := d.ParseNotice(frames(TagAbortAck, "9"))
		if err != nil || n.Kind != MsgAbortAck || n.Room != 9 || n.Rank != -1 {
			t.Errorf("%s: 2-frame ABORT_ACK: %+v %v", d.Wire(), n, err)
		}
		n, err = d.ParseNotice(frames(TagAbortAck, "9", "1", "gen-3"))
		if err != nil || n.Kind != MsgAbortAck || n.Rank != 1 {
			t.Errorf("%s: 4-frame ABORT_ACK: %+v %v", d.Wire(), n, err)
		}
	}
	n, err := moon.ParseNotice(frames("9", "0", "1", "aborted by decode"))
	if err != nil || n.Kind != MsgStatus || n.Status != Failed || n.Reason != "aborted by decode" {
		t.Errorf("mooncake status with reason: %+v %v", n, err)
	}
	full := moon.Registration(Registration{DecodeIP: "10.0.0.2", DecodePort: 9100, KVAddr: "10.0.0.2:9200", DecodeTP: 1})
	for _, k := range []int{10, 14, 19} {
		c, err := moon.ParseControl(full[:k])
		if err != nil || c.Kind != MsgRegistration || c.Registration.KVAddr != "10.0.0.2:9200" || c.Registration.AgentName != "10.0.0.2:9200" {
			t.Errorf("mooncake registration of %d frames: %+v %v", k, c, err)
		}
	}
	meta := moon.Metadata(Metadata{Room: 5, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: "10.0.0.2:9200", Pages: []uint32{1}, RequiredDst: 1, PrefixLen: 4})
	for _, k := range []int{8, 9, 10} {
		c, err := moon.ParseControl(meta[:k])
		wantPrefix := 4
		if k == 8 {
			wantPrefix = 0
		}
		if err != nil || c.Kind != MsgMetadata || c.Metadata.Room != 5 || c.Metadata.RequiredDst != 1 || c.Metadata.PrefixLen != wantPrefix {
			t.Errorf("mooncake TransferInfo of %d frames: %+v %v", k, c, err)
		}
	}
	dummy := append([][]byte(nil), meta...)
	dummy[4], dummy[5] = nil, nil
	if c, err := moon.ParseControl(dummy); err != nil || c.Metadata.AuxIndex != -1 || len(c.Metadata.Pages) != 0 {
		t.Errorf("mooncake dummy TransferInfo: %+v %v", c, err)
	}
}

// A real SGLang NIXL decode's messages are taken in every era's layout:
// the registration before state_ptrs (12 frames: gpu_id at 8) and since
// (TP size at 10, dst_num_slots optional), with NIXL's opaque agent
// metadata instead of a pdchaos KV address (registered with none, so its
// rooms fail at their first write rather than the registration being
// refused), and the 8-frame TransferInfo before state_indices.
func TestNIXLAcceptsRealDecodeLayouts(t *testing.T) {
	t.Parallel()
	nixl := dialectOf(contract.WireNIXL)
	blob := "\x00\x01nixl-agent-metadata"
	ptrs := string(make([]byte, 16))
	for _, tc := range []struct {
		name     string
		f        [][]byte
		tp, rank int
	}{
		{"before state (12 frames)", frames(Guard, TagNone, "10.0.0.2", "9100", "agent-a", blob, ptrs, ptrs, "3", "4", "2", "4096"), 4, 2},
		{"with state (13 frames)", frames(Guard, TagNone, "10.0.0.2", "9100", "agent-a", blob, ptrs, ptrs, "", "3", "4", "2", "4096"), 4, 2},
	} {
		c, err := nixl.ParseControl(tc.f)
		want := Registration{DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: "agent-a", DecodeTP: tc.tp, DecodeRank: tc.rank}
		if err != nil || c.Kind != MsgRegistration || c.Registration != want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, c.Registration, err, want)
		}
	}
	full := nixl.Metadata(Metadata{Room: 5, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: "agent-a", Pages: []uint32{1, 2}, AuxIndex: 3, RequiredDst: 1, PrefixLen: 4})
	for _, k := range []int{8, 9, 10} {
		c, err := nixl.ParseControl(full[:k])
		wantPrefix := 4
		if k < 10 {
			wantPrefix = 0
		}
		if err != nil || c.Kind != MsgMetadata || c.Metadata.Room != 5 || len(c.Metadata.Pages) != 2 || c.Metadata.AuxIndex != 3 || c.Metadata.PrefixLen != wantPrefix {
			t.Errorf("nixl TransferInfo of %d frames: %+v %v", k, c.Metadata, err)
		}
	}
}

// Each dialect refuses the other's layouts: both sides must speak one.
func TestDialectsDoNotMix(t *testing.T) {
	t.Parallel()
	nixl, moon := dialectOf(contract.WireNIXL), dialectOf(contract.WireMooncake)
	reg := Registration{DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: "10.0.0.2:9200", KVAddr: "10.0.0.2:9200", DecodeTP: 1}
	m := Metadata{Room: 5, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: "a", RequiredDst: 1}
	for _, tc := range []struct {
		name string
		d    Dialect
		f    [][]byte
	}{
		{"mooncake registration to nixl", nixl, moon.Registration(reg)},
		{"mooncake metadata to nixl", nixl, moon.Metadata(m)},
		{"nixl registration to mooncake", moon, nixl.Registration(reg)},
		{"nixl metadata to mooncake", moon, nixl.Metadata(m)},
	} {
		if _, err := tc.d.ParseControl(tc.f); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tc.name, err)
		}
	}
	if _, err := nixl.ParseNotice(moon.Status(5, Failed, 0, "")); !errors.Is(err, ErrMalformed) {
		t.Errorf("mooncake status to nixl decode: %v", err)
	}
	if _, err := moon.ParseNotice(nixl.Status(5, Failed, 0, "x")); !errors.Is(err, ErrMalformed) {
		t.Errorf("nixl status to mooncake decode: %v", err)
	}
}

func TestNewDialectRejectsUnknown(t *testing.T) {
	t.Parallel()
	if _, err := NewDialect("ucx"); err == nil || !strings.Contains(err.Error(), "nixl, mooncake") {
		t.Fatalf("NewDialect(ucx) = %v, want an error naming the valid dialects", err)
	}
	if d, err := NewDialect(""); err != nil || d.Wire() != contract.WireNIXL || (Dialect{}).Wire() != contract.WireNIXL {
		t.Fatalf("empty dialect is %s (%v), want nixl", d.Wire(), err)
	}
}

// On Mooncake a room succeeds on decode only once prefill's Success
// status arrives over the control plane (conclude_transfer), after every
// chunk and the aux landed; on NIXL the chunks and aux alone do, and no
// Success goes over ZMQ. A Success for a room decode no longer transfers
// is ignored.
func TestSuccessTravelsOnControlOnlyOnMooncake(t *testing.T) {
	for _, w := range []contract.Wire{contract.WireNIXL, contract.WireMooncake} {
		t.Run(string(w), func(t *testing.T) {
			r := newRig(t, rigOpts{wire: w})
			r.transfer("s", 81, prompt(81, 80), 4)
			var successes int
			for _, n := range r.notices {
				if m, err := r.d.wire.ParseNotice(n.Frames); err == nil && m.Kind == MsgStatus && m.Status == Success {
					successes++
				}
			}
			got := r.d.ranks[0].status.Check(81)
			if w == contract.WireMooncake {
				if successes != 1 || got == Success {
					t.Fatalf("before the notice: %d Success statuses queued, decode reads %v; want 1 and not Success", successes, got)
				}
				r.deliverNotices()
				if got := r.d.ranks[0].status.Check(81); got != Success {
					t.Fatalf("after prefill's Success status decode reads %v", got)
				}
				r.d.OnNotice(r.now, 0, r.d.wire.Status(99, Success, 0, ""))
				if r.d.Probes().Count(contract.ProbeDecodeSuccessNoticeInactive) != 1 {
					t.Error("a Success for a room decode does not hold was not counted as ignored")
				}
			} else if successes != 0 || got != Success {
				t.Fatalf("%d Success statuses queued, decode reads %v; want 0 and Success", successes, got)
			}
			r.finish()
			r.checkAnswer("s")
		})
	}
}
