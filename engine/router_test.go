package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
			host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
			rt, err := engine.StartRouter(t.Context(), contract.EngineConfig{}, engine.RouterConfig{
				PrefillHTTP: host(prefill), DecodeHTTP: host(decode), PrefillBootstrap: host(prefill)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rt.Close(context.Background()) })
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
