// Package fakeserver is a small OpenAI-compatible chat completions server for
// the agents tests: it streams the bundled model's exact answer
// (model.ExpectedChat) token by token, honours client disconnects, and can be
// told to hang, fail or corrupt answers. It must not import harness/, suites/
// or Ginkgo, and it is not the bundled engine (no PD, no rooms of its own).
package fakeserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Options configure a Server.
type Options struct {
	// TokenDelay is the pause before each token (the first one included).
	TokenDelay time.Duration
	// FirstTokenDelay is an extra pause before the first token: the queue
	// and prefill time in which a "queued" cancel lands.
	FirstTokenDelay time.Duration
	// Trivial answers "tok" pieces without computing the model: the cheapest
	// possible server, for benchmarks of the client side.
	Trivial bool
	// NoRoom leaves out the X-PD-Bootstrap-Room header.
	NoRoom bool
}

// Server is a running fake endpoint; URL is its base URL.
type Server struct {
	URL string

	opts         Options
	srv          *httptest.Server
	done         chan struct{}
	hang         atomic.Bool
	corruptEvery atomic.Int64
	errorEvery   atomic.Int64
	requests     atomic.Int64
	disconnects  atomic.Int64
	active       atomic.Int64
}

// New starts a server on a loopback ephemeral port.
func New(o Options) *Server {
	s := &Server{opts: o, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close releases hanging handlers and shuts the server down.
func (s *Server) Close() {
	close(s.done)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetHang makes new requests get no byte at all until the client leaves.
func (s *Server) SetHang(on bool) { s.hang.Store(on) }

// SetCorruptEvery corrupts the answer of every n-th request (0: none, 1: all).
func (s *Server) SetCorruptEvery(n int) { s.corruptEvery.Store(int64(n)) }

// SetErrorEvery answers every n-th request with 503 (0: none).
func (s *Server) SetErrorEvery(n int) { s.errorEvery.Store(int64(n)) }

// Requests is the number of requests received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Disconnects is the number of streams the client left before the end.
func (s *Server) Disconnects() int64 { return s.disconnects.Load() }

// Active is the number of handlers still running.
func (s *Server) Active() int64 { return s.active.Load() }

type chatRequest struct {
	Messages  []model.Message `json:"messages"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	n := s.requests.Add(1)
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens <= 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if !s.opts.NoRoom {
		w.Header().Set(contract.RoomHeader, strconv.FormatUint(uint64(n)*0x9e3779b97f4a7c15>>1, 10))
	}
	if e := s.errorEvery.Load(); e > 0 && n%e == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"fake overloaded"}}`)
		return
	}
	if s.hang.Load() {
		select {
		case <-r.Context().Done():
			s.disconnects.Add(1)
		case <-s.done:
		}
		return
	}
	piece := s.pieces(req, n)
	if !req.Stream {
		var answer strings.Builder
		for i := range req.MaxTokens {
			if !s.wait(r, i) {
				return
			}
			answer.WriteString(piece(i))
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-" + strconv.FormatInt(n, 10),
			"object": "chat.completion", "choices": []any{map[string]any{"index": 0,
				"message": map[string]string{"role": "assistant", "content": answer.String()}, "finish_reason": "length"}}})
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush() // headers first, as SGLang's router does
	}
	for i := range req.MaxTokens {
		if !s.wait(r, i) {
			return
		}
		content, _ := json.Marshal(piece(i))
		if _, err := fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\","+
			"\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", n, content); err != nil {
			s.disconnects.Add(1)
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\","+
		"\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n", n)
}

// pieces returns the text of each output token for req.
func (s *Server) pieces(req chatRequest, n int64) func(int) string {
	if s.opts.Trivial {
		return func(i int) string {
			if i == 0 {
				return "tok"
			}
			return " tok"
		}
	}
	seed := model.Seed(model.PromptKV(model.Tokenize(model.ChatPrompt(req.Messages))))
	if c := s.corruptEvery.Load(); c > 0 && n%c == 0 {
		seed ^= 1 // as if a KV page had been overwritten
	}
	return func(i int) string { return model.Piece(model.OutputToken(seed, i), i) }
}

// wait pauses before token i; false when the client left or the server closes.
func (s *Server) wait(r *http.Request, i int) bool {
	d := s.opts.TokenDelay
	if i == 0 {
		d += s.opts.FirstTokenDelay
	}
	if d <= 0 {
		if r.Context().Err() != nil {
			s.disconnects.Add(1)
			return false
		}
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		s.disconnects.Add(1)
		return false
	case <-s.done:
		return false
	}
}
