package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/zmtp/zmtptest"
)

// foreignDecodeScript is a decode rank that is not ours: libzmq (pyzmq)
// sockets and the frame layouts SGLang's own decode sends, not pdchaos's.
// It looks prefill up through /route (main@2026 names), binds its PULL,
// and on prefill's control socket sends its registration (NIXL: opaque
// agent metadata; Mooncake: a session_id nothing listens on), a message
// no dialect has, then a TransferInfo for argv[3] (pages prefill cannot
// write: it must fail the room and say so) and an ABORT for argv[4]. It
// prints the topology and every message it receives, as JSON lines, until
// it has a status for argv[3] and an ABORT_ACK for argv[4].
const foreignDecodeScript = `
import sys, json, socket, struct, urllib.request, zmq
boot, wire, room_fail, room_abort = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
def route(**kw):
    q = "&".join(f"{k}={v}" for k, v in kw.items())
    with urllib.request.urlopen(f"http://{boot}/route?{q}", timeout=10) as r:
        return json.load(r)
topo = route(prefill_dp_rank=-1, prefill_cp_rank=-1, target_tp_rank=-1, target_pp_rank=-1)
rank = route(prefill_dp_rank=0, prefill_cp_rank=0, target_tp_rank=0, target_pp_rank=0)
print(json.dumps({"topology": topo, "rank": rank}), flush=True)
ctx = zmq.Context()
pull = ctx.socket(zmq.PULL)
pull.setsockopt(zmq.RCVTIMEO, 20000)
port = str(pull.bind_to_random_port("tcp://127.0.0.1")).encode()
push = ctx.socket(zmq.PUSH)
push.setsockopt(zmq.LINGER, 5000)
push.connect(f"tcp://{rank['rank_ip']}:{rank['rank_port']}")
s = socket.socket(); s.bind(("127.0.0.1", 0)); dead = s.getsockname()[1]; s.close()
ip = b"127.0.0.1"
kv_ptrs = struct.pack("2Q", 0x7f0000000000, 0x7f0000100000)
aux_ptrs = struct.pack("Q", 0x7e0000000000)
pages = struct.pack("4i", 0, 1, 2, 3)
if wire == "nixl":
    G = b"NixlMsgGuard"
    push.send_multipart([G, b"None", ip, port, b"sglang-decode-0", b"\x00\x01opaque nixl agent metadata",
                         kv_ptrs, aux_ptrs, b"", b"0", b"1", b"0", b"4096", b"", b"", b"", b"", b"1024", b"VRAM", b""])
    push.send_multipart([b"WHAT", b"is", b"this"])
    push.send_multipart([G, room_fail, ip, port, b"sglang-decode-0", pages, b"0", b"1", b"", b"0"])
else:
    session = f"127.0.0.1:{dead}".encode()
    push.send_multipart([b"None", ip, port, session, kv_ptrs, aux_ptrs, b"", b"0", b"1", b"4096", b"", b"",
                         struct.pack("2I", 0, 1), b"", b"", b"0", b"1", b"0", b""])
    push.send_multipart([b"WHAT", b"is", b"this"])
    push.send_multipart([room_fail, ip, port, session, pages, b"0", b"", b"1", b"0", b""])
push.send_multipart([b"ABORT", room_abort, ip, port])
failed = acked = False
while not (failed and acked):
    m = pull.recv_multipart()
    print(json.dumps([f.hex() for f in m]), flush=True)
    if m[0] == b"ABORT_ACK" and m[1] == room_abort:
        acked = True
    elif room_fail in m[:2]:
        failed = True
push.close(); pull.close(); ctx.term()
`

// A decode that is not ours, speaking each dialect through libzmq with
// the frames SGLang's decode sends, gets from the bundled prefill what a
// real SGLang prefill would give it: the topology and its rank's address
// from /route, a Failed status for a room whose KV prefill cannot write
// (at once, not after a deadline), an ABORT_ACK for a room it aborts; a
// message no dialect has is counted, and the bootstrap loop goes on.
func TestForeignDecodeAgainstPrefill(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	testkit.NoLeaks(t)
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			// Deadlines far past the test's waits: the rooms must end by
			// the peer's messages, not by a backstop.
			p, err := engine.StartPrefill(ctx, contract.EngineConfig{Wire: w, BootstrapTimeout: 5 * time.Minute, InflightTimeout: 5 * time.Minute},
				engine.PrefillAddrs{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Close(context.WithoutCancel(ctx)) }()
			addrs := p.Addrs()
			base := "http://" + addrs.HTTP
			roomFail, roomAbort := uint64(4242), uint64(4343)
			type answer struct {
				took time.Duration
				err  error
			}
			gen := func(room uint64) <-chan answer {
				ch := make(chan answer, 1)
				go func() {
					start := time.Now()
					_, err := testkit.Generate(ctx, base, fmt.Sprint("rid-", room), room, "fix the flaky test", 4)
					ch <- answer{time.Since(start), err}
				}()
				return ch
			}
			failAns, abortAns := gen(roomFail), gen(roomAbort)
			testkit.Eventually(t, 20*time.Second, func() error {
				for _, room := range []uint64{roomFail, roomAbort} {
					if _, held, err := testkit.RoomOn(ctx, base, room); err != nil || !held {
						return fmt.Errorf("prefill does not hold room %d yet (%v)", room, err)
					}
				}
				return nil
			})
			malformed0, err := testkit.Gauge(ctx, base+contract.PathMetrics, contract.MetricMalformedControl)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, zmtptest.Python, "-c", foreignDecodeScript, addrs.Bootstrap, string(w),
				strconv.FormatUint(roomFail, 10), strconv.FormatUint(roomAbort, 10))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("foreign decode: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var first struct {
				Topology map[string]any `json:"topology"`
			}
			if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Topology["attn_tp_size"] != 1.0 {
				t.Errorf("topology as a main@2026 decode reads it: %s (%v)", lines[0], err)
			}
			var status, ack [][]byte
			for _, l := range lines[1:] {
				var hexes []string
				if err := json.Unmarshal([]byte(l), &hexes); err != nil {
					t.Fatalf("foreign decode printed %q: %v", l, err)
				}
				m := make([][]byte, len(hexes))
				for i, h := range hexes {
					m[i], _ = hex.DecodeString(h)
				}
				if string(m[0]) == "ABORT_ACK" {
					ack = m
				} else {
					status = m
				}
			}
			room := func(r uint64) string { return strconv.FormatUint(r, 10) }
			switch w {
			case contract.WireNIXL: // KV_STATUS, room, status, rank, reason (#36612)
				if len(status) != 5 || string(status[0]) != "KV_STATUS" || string(status[1]) != room(roomFail) || string(status[2]) != "0" || string(status[3]) != "0" {
					t.Errorf("status for the room prefill could not write: %q, want KV_STATUS %d Failed(0) rank 0 and a reason", status, roomFail)
				}
			default: // untagged room, status, rank
				if len(status) != 3 || string(status[0]) != room(roomFail) || string(status[1]) != "0" || string(status[2]) != "0" {
					t.Errorf("status for the room prefill could not write: %q, want %d Failed(0) rank 0", status, roomFail)
				}
			}
			if len(ack) != 3 || string(ack[1]) != room(roomAbort) || string(ack[2]) != "0" {
				t.Errorf("ABORT_ACK %q, want ABORT_ACK %d 0", ack, roomAbort)
			}
			for name, ch := range map[string]<-chan answer{"failed": failAns, "aborted": abortAns} {
				a := testkit.Recv(t, ch, 30*time.Second)
				if a.err == nil || !strings.Contains(a.err.Error(), "status 500") {
					t.Errorf("the %s room's /generate: %v after %v, want prefill's 500", name, a.err, a.took)
				}
			}
			testkit.Eventually(t, 20*time.Second, func() error {
				m, err := testkit.Gauge(ctx, base+contract.PathMetrics, contract.MetricMalformedControl)
				if err != nil || m != malformed0+1 {
					return fmt.Errorf("%s = %v (was %v), want one more: the message no dialect has (%v)", contract.MetricMalformedControl, m, malformed0, err)
				}
				if alive, err := testkit.Gauge(ctx, base+contract.PathMetrics, contract.MetricBootstrapLoopAlive); err != nil || alive != 1 {
					return fmt.Errorf("bootstrap loop alive = %v (%v)", alive, err)
				}
				r, err := testkit.Rooms(ctx, base)
				if err != nil || len(r.Held) != 0 {
					return fmt.Errorf("prefill still holds %d rooms (%v)", len(r.Held), err)
				}
				return nil
			})
		})
	}
}

// foreignPrefillScript is a prefill rank that is not ours: a libzmq PULL
// (its port printed first) that reads decode's messages the way SGLang's
// prefill does (NIXL: the guard, then the registration's or
// TransferInfo's fields; Mooncake: None or the room first) and exits
// non-zero on anything it could not read. It answers the first
// TransferInfo with a Failed status in the dialect's layout and an ABORT
// with an ABORT_ACK, each on a PUSH to the address decode gave, printing
// every message it got as a JSON line of hex frames.
const foreignPrefillScript = `
import sys, json, zmq
wire = sys.argv[1]
ctx = zmq.Context()
pull = ctx.socket(zmq.PULL)
pull.setsockopt(zmq.RCVTIMEO, 20000)
print(pull.bind_to_random_port("tcp://127.0.0.1"), flush=True)
def push_to(ip, port, frames):
    p = ctx.socket(zmq.PUSH)
    p.setsockopt(zmq.LINGER, 5000)
    p.connect(f"tcp://{ip.decode()}:{int(port)}")
    p.send_multipart(frames)
    p.close()
registered = failed = acked = False
while not (failed and acked):
    m = pull.recv_multipart()
    print(json.dumps([f.hex() for f in m]), flush=True)
    if m[0] == b"ABORT":
        room, ip, port = int(m[1]), m[2], int(m[3])
        push_to(ip, port, [b"ABORT_ACK", str(room).encode(), b"0"])
        acked = True
        continue
    if wire == "nixl":
        assert m[0] == b"NixlMsgGuard", m[0]
        m = m[1:]
    if m[0] == b"None":
        assert len(m) >= 10, len(m)
        ip, port = m[1], int(m[2])
        registered = True
        continue
    assert registered, "TransferInfo before the registration"
    room, ip, port = int(m[0]), m[1], int(m[2])
    assert len(m[4]) % 4 == 0, "kv indices are not int32s"
    int(m[5]); int(m[7] if wire == "mooncake" else m[6])
    if not failed:
        r = str(room).encode()
        push_to(ip, port, [b"KV_STATUS", r, b"0", b"0", b"foreign prefill cannot send"] if wire == "nixl" else [r, b"0", b"0"])
        failed = True
pull.close(); ctx.term()
`

// The bundled decode against a prefill that is not ours (libzmq, SGLang's
// reading of each dialect, its own bootstrap server): the foreign prefill
// can read decode's registration, TransferInfo and ABORT; its Failed
// status ends decode's request at once (not at the waiting deadline), and
// its ABORT_ACK frees the aborted request's pages at once (not at the ACK
// deadline).
func TestForeignPrefillAgainstDecode(t *testing.T) {
	zmtptest.RequirePyZMQ(t)
	testkit.NoLeaks(t)
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			py := exec.CommandContext(ctx, zmtptest.Python, "-c", foreignPrefillScript, string(w))
			var stderr strings.Builder
			py.Stderr = &stderr
			stdout, err := py.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := py.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			lines.Buffer(make([]byte, 1<<20), 1<<20)
			if !lines.Scan() {
				_ = py.Wait()
				t.Fatalf("foreign prefill printed no port: %s", stderr.String())
			}
			pullPort, _ := strconv.Atoi(strings.TrimSpace(lines.Text()))
			got := make(chan [][]byte, 16)
			go func() {
				defer close(got)
				for lines.Scan() {
					var hexes []string
					if json.Unmarshal(lines.Bytes(), &hexes) != nil {
						continue
					}
					m := make([][]byte, len(hexes))
					for i, h := range hexes {
						m[i], _ = hex.DecodeString(h)
					}
					got <- m
				}
			}()
			// Its bootstrap server: every era's /route, pointing at the PULL.
			boot := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if r.URL.Path == contract.PathHealth {
					_, _ = io.WriteString(rw, "OK")
					return
				}
				q, err := contract.ParseRouteQuery(r.URL.Query())
				if err != nil {
					http.Error(rw, err.Error(), http.StatusBadRequest)
					return
				}
				rw.Header().Set("Content-Type", "application/json")
				if q.Topology {
					_ = json.NewEncoder(rw).Encode(q.Dialect.Answer(contract.RouteTopology{DP: 1, CP: 1, TP: 1, PP: 1, PageSize: 16, KVCacheDtype: "auto"}))
					return
				}
				_ = json.NewEncoder(rw).Encode(map[string]any{"rank_ip": "127.0.0.1", "rank_port": pullPort})
			}))
			defer boot.Close()
			d, err := engine.StartDecode(ctx, contract.EngineConfig{Wire: w, WaitingTimeout: 5 * time.Minute, AckTimeout: 5 * time.Minute}, engine.DecodeAddrs{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.Close(context.WithoutCancel(ctx)) }()
			base := "http://" + d.Addrs().HTTP
			host, port, _ := net.SplitHostPort(strings.TrimPrefix(boot.URL, "http://"))
			bport, _ := strconv.Atoi(port)
			generate := func(ctx context.Context, room uint64) error {
				body, _ := json.Marshal(contract.GenerateRequest{Rid: fmt.Sprint("rid-", room), Text: "fix the flaky test", BootstrapRoom: &room,
					BootstrapHost: host, BootstrapPort: bport, SamplingParams: contract.SamplingParams{MaxNewTokens: 4}})
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+contract.PathGenerate, bytes.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d: %s", resp.StatusCode, b)
				}
				return nil
			}
			// The first request's room fails on the foreign prefill's word.
			if err := generate(ctx, 5151); err == nil || !strings.Contains(err.Error(), "status 500") {
				t.Errorf("room the foreign prefill failed: %v, want decode's 500 at once", err)
			}
			// The second is aborted by its client once decode sent its
			// TransferInfo; the foreign prefill acknowledges the ABORT.
			actx, acancel := context.WithCancel(ctx)
			aborted := make(chan error, 1)
			go func() { aborted <- generate(actx, 5252) }()
			sawMeta := func(m [][]byte) bool {
				body := m
				if w == contract.WireNIXL && len(m) > 0 {
					body = m[1:]
				}
				return len(body) > 0 && string(body[0]) == "5252"
			}
			var msgs [][][]byte
			for m := range got {
				msgs = append(msgs, m)
				if sawMeta(m) {
					acancel()
				}
			}
			acancel()
			if err := py.Wait(); err != nil {
				t.Fatalf("foreign prefill could not read decode's messages: %v\n%s", err, stderr.String())
			}
			if err := <-aborted; err == nil {
				t.Error("the aborted request answered")
			}
			var kinds []string
			for _, m := range msgs {
				kinds = append(kinds, fmt.Sprintf("%q×%d", m[0], len(m)))
			}
			t.Logf("decode sent: %s", strings.Join(kinds, ", "))
			testkit.Eventually(t, 20*time.Second, func() error {
				if err := testkit.GaugeIs(ctx, base+contract.PathMetrics, contract.MetricAwaitingAck, 0); err != nil {
					return fmt.Errorf("pages still held for an ACK the foreign prefill sent: %w", err)
				}
				r, err := testkit.Rooms(ctx, base)
				if err != nil || len(r.Held) != 0 {
					return fmt.Errorf("decode still holds %d rooms (%v)", len(r.Held), err)
				}
				return testkit.GaugeIs(ctx, base+contract.PathMetrics, contract.MetricTokenUsage, 0)
			})
		})
	}
}
