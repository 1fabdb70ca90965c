package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// buildCLI builds the pdchaos binary once per test run.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin, err := testkit.BuildCLI(t.Context(), t.TempDir())
	must(t, err)
	return bin
}

type roleProc struct {
	cmd   *exec.Cmd
	ready map[string]json.RawMessage
}

// startRole runs `pdchaos engine --role …` and waits for its ready line.
func startRole(t *testing.T, bin string, args ...string) *roleProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"engine"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	p := &roleProc{cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("%v exited before it was ready", args)
		}
		must(t, json.Unmarshal([]byte(l), &p.ready))
	case <-time.After(20 * time.Second):
		t.Fatalf("%v not ready within 20s", args)
	}
	return p
}

func (p *roleProc) field(t *testing.T, key string, v any) {
	t.Helper()
	must(t, json.Unmarshal(p.ready[key], v))
}

func TestRolesAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and starts processes")
	}
	bin := buildCLI(t)
	t.Run("wire mooncake", func(t *testing.T) {
		// Every role takes the same --wire; the pair then speaks Mooncake.
		pre := startRole(t, bin, "--role", "prefill", "--wire", "mooncake")
		var pa engine.PrefillAddrs
		pre.field(t, "prefill", &pa)
		dec := startRole(t, bin, "--role", "decode", "--wire", "mooncake")
		var da engine.DecodeAddrs
		dec.field(t, "decode", &da)
		rt := startRole(t, bin, "--role", "router", "--wire", "mooncake", "--prefill-http", pa.HTTP, "--prefill-bootstrap", pa.Bootstrap, "--decode-http", da.HTTP)
		var endpoint string
		rt.field(t, "router", &endpoint)
		msgs := prompt(9)
		cr := testkit.Chat(t.Context(), endpoint, msgs, 5)
		must(t, cr.Err)
		if want, got := model.ExpectedChat(msgs, 5), cr.Text; got != want {
			t.Fatalf("answer over mooncake: got %q want %q", got, want)
		}
		prefillMetrics := "http://" + pa.HTTP + contract.PathMetrics
		if n, err := testkit.Gauge(t.Context(), prefillMetrics, contract.MetricMalformedControl); err != nil || n != 0 {
			t.Errorf("prefill refused %v control messages (%v)", n, err)
		}
		// A decode left on the default dialect is not understood: the flag
		// took effect on both roles.
		nixl := startRole(t, bin, "--role", "decode")
		var na engine.DecodeAddrs
		nixl.field(t, "decode", &na)
		rt2 := startRole(t, bin, "--role", "router", "--prefill-http", pa.HTTP, "--prefill-bootstrap", pa.Bootstrap, "--decode-http", na.HTTP)
		rt2.field(t, "router", &endpoint)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		_ = testkit.Chat(ctx, endpoint, prompt(10), 5)
		testkit.Eventually(t, 10*time.Second, func() error {
			n, err := testkit.Gauge(t.Context(), prefillMetrics, contract.MetricMalformedControl)
			if err == nil && n == 0 {
				err = errors.New("mooncake prefill refused nothing from a nixl decode")
			}
			return err
		})
	})
	pre := startRole(t, bin, "--role", "prefill")
	var pa engine.PrefillAddrs
	pre.field(t, "prefill", &pa)
	dec := startRole(t, bin, "--role", "decode", "--decode-tokens-per-sec", "40")
	var da engine.DecodeAddrs
	dec.field(t, "decode", &da)
	rt := startRole(t, bin, "--role", "router", "--prefill-http", pa.HTTP, "--prefill-bootstrap", pa.Bootstrap, "--decode-http", da.HTTP)
	var endpoint string
	rt.field(t, "router", &endpoint)

	msgs := prompt(3)
	r := testkit.Chat(t.Context(), endpoint, msgs, 6)
	must(t, r.Err)
	if want := model.ExpectedChat(msgs, 6); r.Text != want {
		t.Fatalf("answer through three processes: got %q want %q", r.Text, want)
	}

	// Kill decode in the middle of a stream: the client must get an error,
	// not a hang; so must the next request.
	streamErr := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		close(started)
		streamErr <- testkit.Chat(ctx, endpoint, prompt(4), 400).Err
	}()
	<-started
	testkit.Eventually(t, 10*time.Second, func() error {
		return testkit.GaugeIs(t.Context(), "http://"+da.HTTP+contract.PathMetrics, contract.MetricRunning, 1)
	})
	must(t, dec.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case err := <-streamErr:
		if err == nil {
			t.Fatal("stream survived its decode being killed")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stream hung after decode died: %v", err)
		}
		t.Logf("in-flight stream ended with: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open 10s after decode was killed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := testkit.Chat(ctx, endpoint, prompt(5), 4).Err
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("request after decode died: want a prompt 502, got %v", err)
	}
}
