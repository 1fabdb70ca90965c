package protocol

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

// FuzzClassify classifies any multipart message, seeded with every layout
// of sglang-wire.md in both dialects (NIXL, Mooncake), with the new and old
// frame counts: no panic; the answer is consistent (a room only for the
// kinds that carry one, and then the decimal of the frame that holds it);
// and extra trailing frames never turn an ABORT or ABORT_ACK into
// something else (open upstream work appends frames to both).
func FuzzClassify(f *testing.F) {
	seeds := [][][]byte{
		nixlRegistration(), nixlRegistration()[:13], nixlTransferInfo("9223372036854775807"),
		msg(KVStatusFrame, "42", "0", "1", "Aborted by AbortReq"), msg(KVStatusFrame, "42", "0", "1"),
		mooncakeRegistration(), mooncakeRegistration()[:10], mooncakeTransferInfo("77"),
		mooncakeTransferInfo("77")[:9], mooncakeTransferInfo("77")[:8],
		msg("12", "4", "0"), msg("12", "0", "3", "Failed to send kv chunk"), msg("12", "-1", "0"),
		msg(AuxDataFrame, "12", "0", "5", "\x00\x00\x00\x04", "data"),
		msg(AbortFrame, "42", "10.1.2.3", "41235"), msg(AbortFrame, "42", "10.1.2.3", "41235", "7", "tok"),
		msg(AbortAckFrame, "7"), msg(AbortAckFrame, "7", "1"), msg(AbortAckFrame, "7", "1", "3"),
		msg("STAGING_REQ", "9", "0", "16", "10.1.2.3:17001", "1"),
		msg("STAGING_RSP", "9", "0", "4096", "2", "0", "10.1.2.3:17001"),
		msg("WATERMARK", "2", "8192", "10.1.2.3:17001"),
		msg("CHUNK_READY", "9", "0", "0", "16", "10.1.2.3:17001", "0"),
		nil, msg(""), msg(GuardFrame),
	}
	for _, s := range seeds {
		f.Add(testkit.JoinFrames(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		frames := testkit.SplitFrames(in)
		kind, room, hasRoom := Classify(frames)
		if k2, r2, h2 := Classify(frames); k2 != kind || r2 != room || h2 != hasRoom {
			t.Fatalf("classify is not deterministic: %s %d %v then %s %d %v", kind, room, hasRoom, k2, r2, h2)
		}
		switch kind {
		case KindRegistration, KindUnknown:
			if hasRoom || room != 0 {
				t.Fatalf("%s with room %d (%v)", kind, room, hasRoom)
			}
		case KindMetadata, KindAbort, KindAck, KindStatus, KindAux, KindStaging:
			if !hasRoom && kind != KindStaging {
				t.Fatalf("%s without a room", kind)
			}
		default:
			t.Fatalf("kind %q is not in Kinds", kind)
		}
		if hasRoom {
			at := 1
			if _, err := strconv.ParseUint(string(frames[0]), 10, 64); err == nil {
				at = 0 // Mooncake's untagged TransferInfo and status
			}
			if want, err := strconv.ParseUint(string(frames[at]), 10, 64); err != nil || want != room {
				t.Fatalf("%s room %d, but frame %d is %q", kind, room, at, frames[at])
			}
		}
		if kind == KindAbort || kind == KindAck {
			more := append(append([][]byte(nil), frames...), []byte("gen-1"))
			if k, r, _ := Classify(more); k != kind || r != room {
				t.Fatalf("%s of room %d with a trailing frame is %s room %d", kind, room, k, r)
			}
		}
	})
}

// FuzzRouteRewrite rewrites any /route answer: no panic or error; an
// answer naming the mapped rank comes back naming the proxy, with every
// other field unchanged; any other answer comes back byte for byte.
func FuzzRouteRewrite(f *testing.F) {
	for _, s := range []string{
		`{"rank_ip":"10.0.0.5","rank_port":17000}`,
		`{"rank_ip":"10.0.0.5","rank_port":17000,"extra":true,"nested":{"a":[1,2.5e3,null]}}`,
		`{"rank_ip":"10.0.0.6","rank_port":17000}`,
		`{"attn_tp_size":1,"attn_cp_size":1,"dp_size":1,"pp_size":1,"page_size":64,"kv_cache_dtype":"auto","follow_bootstrap_room":true}`,
		`{"prefill_attn_tp_size":2,"prefill_dp_size":1,"prefill_pp_size":1}`,
		`{"rank_ip":"10.0.0.5","rank_port":"17000"}`,
		`{"rank_ip":"10.0.0.5","rank_port":17000,"rank_ip":"10.0.0.5"}`,
		`[1,2]`, `null`, `OK`, ``,
	} {
		f.Add([]byte(s))
	}
	const from, to = "10.0.0.5:17000", "127.0.0.1:45678"
	f.Fuzz(func(t *testing.T, body []byte) {
		rr := NewRouteRewriter(&url.URL{Scheme: "http", Host: "127.0.0.1:1"})
		rr.Map(from, to)
		out, err := rr.rewrite(body)
		if err != nil {
			t.Fatalf("rewrite %q: %v", body, err)
		}
		var in map[string]json.RawMessage
		var ip string
		var port int
		mapped := json.Unmarshal(body, &in) == nil && json.Unmarshal(in["rank_ip"], &ip) == nil &&
			json.Unmarshal(in["rank_port"], &port) == nil && ip == "10.0.0.5" && port == 17000
		if !mapped {
			if !bytes.Equal(out, body) {
				t.Fatalf("answer not naming %s changed:\n in %q\nout %q", from, body, out)
			}
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("rewritten answer is not a JSON object: %q: %v", out, err)
		}
		if string(got["rank_ip"]) != `"127.0.0.1"` || string(got["rank_port"]) != "45678" || len(got) != len(in) {
			t.Fatalf("rewritten %q to %q", body, out)
		}
		for k, v := range in {
			if k == "rank_ip" || k == "rank_port" {
				continue
			}
			var want bytes.Buffer
			if err := json.Compact(&want, v); err != nil || !bytes.Equal(want.Bytes(), got[k]) {
				t.Fatalf("field %q changed from %s to %s", k, v, got[k])
			}
		}
	})
}

// An answer over maxRouteAnswer is relayed untouched as it streams, not
// read into memory to be rewritten.
func TestRouteRewriterRelaysHugeAnswers(t *testing.T) {
	huge := `{"rank_ip":"10.0.0.5","rank_port":17000,"pad":"` + strings.Repeat("x", maxRouteAnswer) + `"}`
	boot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, huge) }))
	defer boot.Close()
	u, _ := url.Parse(boot.URL)
	rr := NewRouteRewriter(u)
	rr.Map("10.0.0.5:17000", "127.0.0.1:45678")
	front := httptest.NewServer(rr)
	defer front.Close()
	resp, err := http.Get(front.URL + "/route?target_tp_rank=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(got) != huge {
		t.Fatalf("huge answer: status %d, %d bytes (want %d), %v", resp.StatusCode, len(got), len(huge), err)
	}
}
