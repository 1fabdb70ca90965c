package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// TestRouterReportsADecodeStreamThatEndsEarly: the router reads decode's
// SSE stream and turns a stream that ends before its finish into an error
// event for the client, naming a broken connection's read error.
func TestRouterReportsADecodeStreamThatEndsEarly(t *testing.T) {
	const first = `data: {"text":"a","meta_info":{"completion_tokens":1}}` + "\n\n"
	const finish = `data: {"text":"a b","meta_info":{"completion_tokens":2,"finish_reason":{"type":"length","length":2}}}` + "\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name   string
		decode func(w http.ResponseWriter)
		text   string
		err    string
	}{
		{"finished", func(w http.ResponseWriter) { fmt.Fprint(w, first+finish) }, "a b", ""},
		{"finished without [DONE]", func(w http.ResponseWriter) { fmt.Fprint(w, first+strings.TrimSuffix(finish, "data: [DONE]\n\n")) }, "a b", ""},
		{"ends cleanly before its finish", func(w http.ResponseWriter) { fmt.Fprint(w, first) },
			"", "stream error: decode stream ended early"},
		{"connection cut", func(w http.ResponseWriter) {
			fmt.Fprint(w, first)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server drops the connection mid-body
		}, "", "stream error: decode stream ended early: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			t.Cleanup(prefill.Close)
			decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.decode(w)
			}))
			t.Cleanup(decode.Close)
			rt := startTestRouter(t, prefill, decode)
			r := testkit.Chat(t.Context(), "http://"+rt.Addr(), []model.Message{{Role: "user", Content: "x"}}, 2)
			got := ""
			if r.Err != nil {
				got = r.Err.Error()
			}
			if got != tc.err || r.Text != tc.text {
				t.Fatalf("answer %q, error %q; want %q, %q", r.Text, got, tc.text, tc.err)
			}
		})
	}
}

// A client that does not stream gets decode's whole answer, asked for
// without streaming (the gateway forwards the client's stream flag); an
// answer cut off is an error naming the broken read, not a short answer.
func TestRouterPlainAnswerFromDecode(t *testing.T) {
	const whole = `{"text":"a b","meta_info":{"prompt_tokens":1,"completion_tokens":2,"finish_reason":{"type":"length","length":2}}}`
	for _, tc := range []struct {
		name   string
		decode func(w http.ResponseWriter)
		status int
		text   string
		err    string
	}{
		{"whole", func(w http.ResponseWriter) { fmt.Fprint(w, whole) }, http.StatusOK, "a b", ""},
		{"cut", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "500")
			fmt.Fprint(w, whole[:20])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, http.StatusInternalServerError, "", "decode stream ended early: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			t.Cleanup(prefill.Close)
			var streamed atomic.Value
			decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req contract.GenerateRequest
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &req)
				streamed.Store(req.Stream)
				w.Header().Set("Content-Type", "application/json")
				tc.decode(w)
			}))
			t.Cleanup(decode.Close)
			rt := startTestRouter(t, prefill, decode)
			resp, err := http.Post("http://"+rt.Addr()+contract.PathChatCompletions, "application/json",
				strings.NewReader(`{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"x"}]}`))
			must(t, err)
			defer resp.Body.Close()
			var body struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
				Error struct{ Message string } `json:"error"`
			}
			must(t, json.NewDecoder(resp.Body).Decode(&body))
			if s, _ := streamed.Load().(bool); s {
				t.Error("decode was asked to stream for a client that does not")
			}
			text := ""
			if len(body.Choices) > 0 {
				text = body.Choices[0].Message.Content
			}
			if resp.StatusCode != tc.status || text != tc.text || body.Error.Message != tc.err {
				t.Fatalf("status %d, answer %q, error %q; want %d, %q, %q", resp.StatusCode, text, body.Error.Message, tc.status, tc.text, tc.err)
			}
		})
	}
}

// A client's rid reaches both engines as the request's rid; when decode
// refuses the request outright (4xx: a rid it still holds), the router
// cancels prefill's leg at once instead of leaving the room to prefill's
// bootstrap timeout; a rid over the limit is refused before either is
// called.
func TestRouterClientRid(t *testing.T) {
	testkit.NoLeaks(t)
	var mu sync.Mutex
	var rids []string
	record := func(r *http.Request) {
		var req contract.GenerateRequest
		// Read to EOF, as the engine's handlers do: Go's server notices a
		// client that went away (the router's cancel) only after that.
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		mu.Lock()
		rids = append(rids, req.Rid)
		mu.Unlock()
	}
	prefillCancelled, prefillHolds := make(chan struct{}), make(chan struct{})
	prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		close(prefillHolds)
		<-r.Context().Done() // waits for a decode that will never come, unless cancelled
		close(prefillCancelled)
	}))
	t.Cleanup(prefill.Close)
	decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		// Refuse only once prefill holds the request: a refusal that beats
		// the prefill leg to prefill cancels it before it is sent, and
		// prefill never sees it (right, but not this test's case).
		select {
		case <-prefillHolds:
		case <-time.After(10 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"add request client-rid-1: duplicate rid","type":"BadRequestError","code":400}}`)
	}))
	t.Cleanup(decode.Close)
	rt := startTestRouter(t, prefill, decode)
	post := func(rid string) (int, string) {
		body := fmt.Sprintf(`{"model":"m","stream":true,"rid":%q,"messages":[{"role":"user","content":"x"}]}`, rid)
		resp, err := http.Post("http://"+rt.Addr()+contract.PathChatCompletions, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("client-rid-1"); code != http.StatusBadRequest || !strings.Contains(body, "duplicate rid") {
		t.Fatalf("decode's refusal reached the client as %d %s", code, body)
	}
	select {
	case <-prefillCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("prefill's leg still runs 10s after decode refused the request")
	}
	mu.Lock()
	got := append([]string(nil), rids...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "client-rid-1" || got[1] != "client-rid-1" {
		t.Fatalf("rids the engines saw: %q, want client-rid-1 on both", got)
	}
	if code, body := post(strings.Repeat("r", 300)); code != http.StatusBadRequest || !strings.Contains(body, "rid: 300 bytes, longer than 256") {
		t.Fatalf("a 300-byte rid: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rids) != 2 {
		t.Fatalf("a refused rid still reached the engines: %q", rids[2:])
	}
}

// When prefill refuses the request outright (4xx: a rid it still holds)
// before decode answers, the router cancels decode's leg at once instead
// of leaving decode's room to its waiting timeout, and the client gets
// prefill's refusal, on /generate and on the chat route alike.
func TestRouterPrefillRefused(t *testing.T) {
	testkit.NoLeaks(t)
	prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"add request client-rid-2: duplicate rid","type":"BadRequestError","code":400}}`)
	}))
	t.Cleanup(prefill.Close)
	// running counts decode legs still open: the router may cancel one
	// before it is sent, or after decode took it, never leave it running.
	var running atomic.Int64
	stop := make(chan struct{})
	decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		// The body read to its end, the server sees the router hang up.
		_, _ = io.Copy(io.Discard, r.Body)
		select { // waits for KV that will never come, unless cancelled
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(decode.Close)
	t.Cleanup(func() { close(stop) }) // before decode.Close, which waits for its handlers
	rt := startTestRouter(t, prefill, decode)
	for _, tc := range []struct{ path, body string }{
		{contract.PathGenerate, `{"text":"x","rid":"client-rid-2","stream":true}`},
		{contract.PathChatCompletions, `{"model":"m","stream":true,"rid":"client-rid-2","messages":[{"role":"user","content":"x"}]}`},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+rt.Addr()+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v (the client waited on a decode leg prefill's refusal should have ended)", tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "duplicate rid") {
			t.Fatalf("%s: prefill's refusal reached the client as %d %s", tc.path, resp.StatusCode, b)
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			if n := running.Load(); n != 0 {
				return fmt.Errorf("%s: %d decode legs still run after prefill refused the request", tc.path, n)
			}
			return nil
		})
	}
	resp, err := http.Get("http://" + rt.Addr() + contract.PathDebugProbes)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pr contract.ProbesResponse
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil {
		t.Fatal(err)
	}
	want, hits := contract.ProbeRouterPrefillRefused.String(), int64(-1)
	for _, p := range pr.Probes {
		if p.Name == want {
			hits = p.Hits
		}
	}
	if hits != 2 {
		t.Fatalf("%s hit %d times (-1: not listed), want 2", want, hits)
	}
}

// startTestRouter starts a router in front of stand-in prefill and decode
// servers (prefill's bootstrap address is its HTTP one), closed with the test.
func startTestRouter(t *testing.T, prefill, decode *httptest.Server) *engine.Router {
	t.Helper()
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	rt, err := engine.StartRouter(t.Context(), contract.EngineConfig{}, engine.RouterConfig{
		PrefillHTTP: host(prefill), DecodeHTTP: host(decode), PrefillBootstrap: host(prefill)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// A client that chooses its own bootstrap_room (SGLang's OpenAI body takes
// it, as /generate does) has it passed to both engines; without one the
// router draws a room.
func TestRouterClientRoom(t *testing.T) {
	testkit.NoLeaks(t)
	roomOf := func(r *http.Request) uint64 {
		var req contract.GenerateRequest
		// Read to EOF, as the engine's handlers do.
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil || req.BootstrapRoom == nil {
			return 0
		}
		return *req.BootstrapRoom
	}
	prefillRooms, decodeRooms := make(chan uint64, 2), make(chan uint64, 2)
	prefillHolds := make(chan struct{}, 2)
	prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefillRooms <- roomOf(r)
		prefillHolds <- struct{}{}
		<-r.Context().Done() // until decode's refusal cancels this leg
	}))
	t.Cleanup(prefill.Close)
	decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room := roomOf(r)
		// Refuse only once prefill holds the request (see
		// TestRouterClientRid): both legs are then sure to be sent.
		select {
		case <-prefillHolds:
		case <-time.After(10 * time.Second):
		}
		decodeRooms <- room
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"refused","type":"BadRequestError","code":400}}`)
	}))
	t.Cleanup(decode.Close)
	rt := startTestRouter(t, prefill, decode)
	post := func(rid, extra string) (p, d uint64) {
		body := `{"model":"m","stream":true,"rid":"` + rid + `",` + extra + `"messages":[{"role":"user","content":"x"}]}`
		resp, err := http.Post("http://"+rt.Addr()+contract.PathChatCompletions, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return <-prefillRooms, <-decodeRooms
	}
	const chosen = 4242424242
	if p, d := post("r-1", `"bootstrap_room":4242424242,`); p != chosen || d != chosen {
		t.Fatalf("the engines saw rooms %d and %d, want the client's %d", p, d, chosen)
	}
	if p, d := post("r-2", ""); p != d || p == chosen || p == 0 {
		t.Fatalf("without bootstrap_room the engines saw rooms %d and %d, want one the router drew", p, d)
	}
}
