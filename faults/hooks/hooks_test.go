package hooks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/faults/hooks"
	"github.com/pdchaos/pdchaos/faults/internal/faketarget"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

var worker0 = contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: 0, Worker: 0}

func serve(t *testing.T) (*faketarget.Hooks, *hooks.HooksClient) {
	t.Helper()
	fh := faketarget.NewHooks(worker0,
		contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: 0, Worker: 1},
		contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0})
	mux := http.NewServeMux()
	mux.Handle(contract.HooksPath, engine.ServeHooks(fh))
	srv := httptest.NewServer(mux)
	tr := &http.Transport{}
	t.Cleanup(func() { tr.CloseIdleConnections(); srv.Close() })
	return fh, &hooks.HooksClient{BaseURL: srv.URL + "/", Client: &http.Client{Transport: tr}}
}

func waitHeld(t *testing.T, c *hooks.HooksClient, spec contract.HookSpec) contract.HookState {
	t.Helper()
	var got contract.HookState
	faketarget.Eventually(t, 10*time.Second, func() bool {
		states, err := c.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.HookSpec == spec && s.Held > 0 {
				got = s
				return true
			}
		}
		return false
	}, spec.String()+" never held")
	return got
}

func TestClientServerRoundTrip(t *testing.T) {
	fh, c := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := faketarget.RunActor(ctx, fh.Gate(worker0), nil)
	defer wait()
	defer cancel()

	all := contract.HookSpec{Hook: contract.HookTransferWorkers, Role: "prefill", Rank: -1, Worker: -1}
	if err := c.Pause(ctx, all); err != nil {
		t.Fatalf("pause: %v", err)
	}
	st := waitHeld(t, c, worker0)
	if !st.Paused {
		t.Errorf("state %+v: want paused", st)
	}
	if err := c.Resume(ctx, all); err != nil {
		t.Fatalf("resume: %v", err)
	}
	states, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Paused {
			t.Errorf("%s still paused after resume", s.HookSpec)
		}
	}
	if err := c.Pause(ctx, contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0}); err != nil {
		t.Fatal(err)
	}
	if err := c.ResumeAll(ctx); err != nil {
		t.Fatalf("resume-all: %v", err)
	}
	if fh.Gate(contract.HookSpec{Hook: contract.HookScheduler, Role: "decode", Rank: 0}).Paused() {
		t.Error("resume-all left the scheduler paused")
	}
}

func TestErrors(t *testing.T) {
	_, c := serve(t)
	ctx := context.Background()
	err := c.Pause(ctx, contract.HookSpec{Hook: "nope", Role: "prefill", Rank: 0})
	if !errors.Is(err, contract.ErrUnknownHook) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown hook: %v", err)
	}
	bad := &hooks.HooksClient{BaseURL: c.BaseURL + "missing", Client: c.Client}
	if _, err := bad.State(ctx); err == nil {
		t.Error("state from a wrong URL succeeded")
	}
	resp, err := c.Client.Post(strings.TrimSuffix(c.BaseURL, "/")+contract.HooksPath, "application/json",
		strings.NewReader(`{"action":"explode"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad action: status %d, want 400", resp.StatusCode)
	}
}

func TestLoopbackOnly(t *testing.T) {
	h := engine.ServeHooks(faketarget.NewHooks())
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, contract.HooksPath, nil)
	req.RemoteAddr = "10.1.2.3:4444"
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("non-loopback GET: status %d, want 403", rec.Code)
	}
}

// TestEngineErrorBody checks the client reads the engine's OpenAI-style
// error body and still recognises an unknown hook.
func TestEngineErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"unknown engine hook: prefill/x","type":"Bad Request","code":400}}`))
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &hooks.HooksClient{BaseURL: srv.URL, Client: &http.Client{Transport: tr}}
	err := c.Resume(context.Background(), worker0)
	if !errors.Is(err, contract.ErrUnknownHook) || !strings.Contains(err.Error(), "prefill/x") {
		t.Errorf("engine error body: %v", err)
	}
}
