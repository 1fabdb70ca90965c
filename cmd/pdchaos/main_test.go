package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// execute runs the CLI with args and returns its exit code and output.
func execute(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot(&selfStats{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	if err == nil {
		return exitPass, out.String()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, out.String() + ee.Error()
	}
	return exitHarness, out.String() + err.Error()
}

func TestRegressionList(t *testing.T) {
	code, out := execute(t, "engine", "--regression", "list")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, r := range contract.Catalogue() {
		if !strings.Contains(out, r.Name) || !strings.Contains(out, r.Symptom) {
			t.Errorf("list lacks %s or its symptom:\n%s", r.Name, out)
		}
	}
}

func TestBadInputIsAHarnessError(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nduration: 5s\nengin:\n  tp: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown regression", []string{"engine", "--regression", "nope"}, `unknown regression "nope"`},
		{"unknown wire dialect", []string{"engine", "--wire", "ucx"}, `wire: unknown wire dialect "ucx" (valid: nixl, mooncake)`},
		{"run unknown regression", []string{"run", "abort-storm", "--regression", "nope"}, `unknown regression "nope"`},
		{"unknown gauge mode", []string{"engine", "--gauges", "stale"}, `gauges: "stale" is not a gauge mode (live or logged)`},
		{"run unknown gauge mode", []string{"run", "abort-storm", "--gauges", "stale"}, `--gauges: "stale" is not a gauge mode`},
		{"run unknown wire", []string{"run", "abort-storm", "--wire", "rdma"}, `--wire: unknown wire dialect "rdma" (valid: nixl, mooncake)`},
		{"scenario with an unknown key", []string{"run", bad}, "engin"},
		{"unknown scenario", []string{"run", "no-such-preset"}, "no-such-preset"},
		{"remote engine host", []string{"engine", "--host", "10.0.0.1"}, "--allow-remote"},
		{"watch an unreachable engine", []string{"watch", "--metrics", "http://127.0.0.1:1/metrics", "--for", "1s"}, "scrape"},
		{"watch a remote engine", []string{"watch", "--metrics", "http://192.168.1.1:30000/metrics"}, "--allow-remote"},
		{"faults reset with nothing to reset", []string{"faults", "reset"}, "--leftovers"},
		{"bench unknown part", []string{"bench", "--parts", "engine,gpu"}, `unknown part "gpu"`},
		{"bench no part", []string{"bench", "--parts", ","}, "none given"},
		{"bench missing base", []string{"bench", "--parts", "engine", "--base", "/nonexistent/bench.json"}, "read bench report"},
		{"self-stats period zero", []string{"engine", "--regression", "list", "--self-stats", filepath.Join(t.TempDir(), "s.jsonl"), "--self-stats-every", "0s"}, "must be > 0"},
		{"bootstrap on the bundled target", []string{"run", "abort-storm", "--bootstrap", "http://127.0.0.1:8998"}, "describe an external target"},
		{"remote bootstrap", []string{"run", "abort-storm", "--target", "external", "--router", "http://127.0.0.1:1", "--metrics", "http://127.0.0.1:1/metrics",
			"--bootstrap", "http://10.0.0.1:8998"}, "--allow-remote"},
		{"unreachable bootstrap", []string{"run", "abort-overtakes-metadata", "--target", "external", "--router", "http://127.0.0.1:1", "--metrics", "http://127.0.0.1:1/metrics",
			"--bootstrap", "http://127.0.0.1:1", "--results", t.TempDir()}, "read prefill topology"},
		{"run with no scenario and two regressions", []string{"run", "--regression", "rank-desync", "--regression", "decode-abort-leak"}, "exactly one --regression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := execute(t, tc.args...)
			if code != exitHarness || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output %q; want exit %d mentioning %q", code, out, exitHarness, tc.want)
			}
		})
	}
}

func TestWatchHealthyEngine(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{})
	args := []string{"watch", "--for", "1s", "--window", "500ms"}
	for _, u := range c.MetricsURLs() {
		args = append(args, "--metrics", u)
	}
	code, out := execute(t, args...)
	if code != exitPass || !strings.Contains(out, "no wedge") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestWatchFlagsAWedge(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{Regressions: []string{contract.DecodeAbortLeak}})
	h, _ := c.Hooks()
	workers := contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: -1}
	if err := h.Pause(t.Context(), workers); err != nil {
		t.Fatal(err)
	}
	// A request waits for its KV, its client leaves, and decode keeps it
	// queued for ever: the transfer-queue gauge is stuck at 1.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := strings.NewReader(`{"text":"` + strings.Repeat("wedge me ", 200) + `","sampling_params":{"max_new_tokens":4}}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint()+contract.PathGenerate, body)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var room uint64
	testkit.Eventually(t, 10*time.Second, func() error {
		if err := testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 1); err != nil {
			return fmt.Errorf("request never reached decode's transfer queue: %w", err)
		}
		r, err := testkit.Rooms(t.Context(), c.EngineURLs()[1])
		if err != nil || len(r.Held) == 0 {
			return fmt.Errorf("decode holds no room yet (%v)", err)
		}
		room = r.Held[0].Room
		// Prefill must hold it too: on a loaded machine the router's
		// prefill leg can still be on its way, and a cancel then never
		// reaches prefill as an abort of a request it has.
		if _, held, err := testkit.RoomOn(t.Context(), c.EngineURLs()[0], room); err != nil || !held {
			return fmt.Errorf("prefill does not hold room %d yet (%v)", room, err)
		}
		return nil
	})
	cancel()
	<-done
	// Both engines must have taken the cancel before the workers resume:
	// a prefill that had not would send the KV, and decode would run the
	// request to its end instead of keeping it queued. Prefill may have
	// taken decode's ABORT first and failed the room: it sends nothing
	// either, and the router's cancel then finds no request to abort.
	testkit.Eventually(t, 10*time.Second, func() error {
		for i, base := range c.EngineURLs() {
			rec, held, err := testkit.RoomOn(t.Context(), base, room)
			if err != nil {
				return err
			}
			stopped := func(e contract.Event) bool {
				return e.Kind == contract.RoomEventAbortRequest || i == 0 && e.Kind == contract.RoomEventAbortReceived
			}
			if !slices.ContainsFunc(rec.Events, stopped) {
				return fmt.Errorf("room %d: engine %d (%s, held %v) has not taken the cancel yet; its events: %+v", room, i, base, held, rec.Events)
			}
		}
		return nil
	})
	if err := h.ResumeAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	args := []string{"watch", "--for", "20s", "--window", "1s"}
	for _, u := range c.MetricsURLs() {
		args = append(args, "--metrics", u)
	}
	start := time.Now()
	code, out := execute(t, args...)
	if code != exitViolation || !strings.Contains(out, contract.MetricDecodeTransferQueue) {
		t.Fatalf("exit %d after %v: %s", code, time.Since(start), out)
	}
}

func TestReproOfAMissingBundle(t *testing.T) {
	code, out := execute(t, "repro", filepath.Join(t.TempDir(), "nope"))
	if code != exitHarness || !strings.Contains(out, "repro") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
