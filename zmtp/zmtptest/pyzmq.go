package zmtptest

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Python is the interpreter the interop tests use: the system one, which
// is where Debian's python3-zmq lives.
const Python = "/usr/bin/python3"

// RequirePyZMQ skips the test when pyzmq is unavailable, or fails it when
// PDCHAOS_REQUIRE_PYZMQ=1, naming the script that installs it. (CI installs
// it through make deps; where no Debian mirror is reachable the interop
// tests skip loudly rather than fail the build.)
func RequirePyZMQ(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import zmq").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("python3-zmq not available (%v: %s); run scripts/setup-test-deps.sh", err, strings.TrimSpace(string(out)))
	if os.Getenv("PDCHAOS_REQUIRE_PYZMQ") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// pushScript connects a pyzmq PUSH to argv[1] and sends the JSON list of
// messages (lists of hex frames) read from stdin, then waits for delivery.
const pushScript = `
import sys, json, zmq
msgs = json.load(sys.stdin)
ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.setsockopt(zmq.LINGER, 20000)
s.connect(sys.argv[1])
for m in msgs:
    s.send_multipart([bytes.fromhex(f) for f in m])
s.close()
ctx.term()
print("sent", len(msgs), flush=True)
`

// pullScript binds a pyzmq PULL on a random loopback port, prints the port,
// then prints each of argv[1] received messages as a JSON list of hex frames.
// With argv[2] > 0 it heartbeats its peers every that many milliseconds
// (ZMQ_HEARTBEAT_IVL) and drops one that does not answer within ten.
const pullScript = `
import sys, json, zmq
n = int(sys.argv[1])
hb = int(sys.argv[2]) if len(sys.argv) > 2 else 0
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.setsockopt(zmq.RCVTIMEO, 30000)
if hb:
    s.setsockopt(zmq.HEARTBEAT_IVL, hb)
    s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 10 * hb)
    s.setsockopt(zmq.HEARTBEAT_TTL, 10 * hb)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
for _ in range(n):
    print(json.dumps([f.hex() for f in s.recv_multipart()]), flush=True)
s.close(linger=0)
ctx.term()
`

// PyPush sends msgs from a pyzmq PUSH connected to addr (host:port) and
// returns once the script exits (all messages handed to libzmq and
// lingered out).
func PyPush(ctx context.Context, addr string, msgs [][][]byte) error {
	enc := make([][]string, len(msgs))
	for i, m := range msgs {
		enc[i] = make([]string, len(m))
		for j, f := range m {
			enc[i][j] = hex.EncodeToString(f)
		}
	}
	in, err := json.Marshal(enc)
	if err != nil {
		return fmt.Errorf("encode messages for pyzmq push: %w", err)
	}
	cmd := exec.CommandContext(ctx, Python, "-c", pushScript, "tcp://"+addr)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("run pyzmq push to %s: %w: %s", addr, err, out)
	}
	return nil
}

// PyPull is a running pyzmq PULL that expects a fixed number of messages.
type PyPull struct {
	// Addr is the host:port the PULL is bound on.
	Addr string
	cmd  *exec.Cmd
	out  *bufio.Scanner
}

// StartPyPull starts a pyzmq PULL that will receive n messages. The caller
// must call Wait (or cancel ctx and then Wait) to reap the process.
func StartPyPull(ctx context.Context, n int) (*PyPull, error) { return StartPyPullHeartbeat(ctx, n, 0) }

// StartPyPullHeartbeat is StartPyPull with libzmq's ZMTP heartbeats on
// (every ivl, a peer silent for ten dropped); 0 is off.
func StartPyPullHeartbeat(ctx context.Context, n int, ivl time.Duration) (*PyPull, error) {
	cmd := exec.CommandContext(ctx, Python, "-c", pullScript, fmt.Sprint(n), fmt.Sprint(ivl.Milliseconds()))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start pyzmq pull: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pyzmq pull: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start pyzmq pull: no port printed: %v", sc.Err())
	}
	return &PyPull{Addr: "127.0.0.1:" + strings.TrimSpace(sc.Text()), cmd: cmd, out: sc}, nil
}

// Wait reads every message the PULL printed and waits for it to exit.
func (p *PyPull) Wait() ([][][]byte, error) {
	var msgs [][][]byte
	for p.out.Scan() {
		var hexes []string
		if err := json.Unmarshal(p.out.Bytes(), &hexes); err != nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			return msgs, fmt.Errorf("decode pyzmq pull output: %w", err)
		}
		m := make([][]byte, len(hexes))
		for i, h := range hexes {
			b, err := hex.DecodeString(h)
			if err != nil {
				return msgs, fmt.Errorf("decode pyzmq pull frame: %w", err)
			}
			m[i] = b
		}
		msgs = append(msgs, m)
	}
	if err := p.cmd.Wait(); err != nil {
		return msgs, fmt.Errorf("pyzmq pull exited: %w", err)
	}
	return msgs, nil
}
