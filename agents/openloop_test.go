package agents

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/fakeserver"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestOpenLoop(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{TokenDelay: time.Millisecond})
	defer srv.Close()
	srv.SetCorruptEvery(10)

	for _, stream := range []bool{false, true} {
		rec := newRecorder()
		var c Counters
		err := RunOpenLoop(t.Context(), OpenLoopConfig{Endpoint: srv.URL, Seed: 1, Sink: rec.sink,
			Check: ModelCheck, Counters: &c, Options: OpenLoopOptions{Stream: stream, Phases: []LoadPhase{
				{Name: "steady", Rate: 40, Duration: 500 * time.Millisecond},
				{Name: "ramp", Shape: ShapeLinear, Rate: 20, Slope: 40, Duration: 500 * time.Millisecond},
				{Name: "wave", Shape: ShapeSine, Rate: 40, Amp: 20, Period: 250 * time.Millisecond, Duration: 500 * time.Millisecond},
			}}})
		if err != nil {
			t.Fatal(err)
		}
		outs, st := rec.all(), c.Snapshot()
		t.Logf("stream=%v: %+v", stream, st)
		if len(outs) < 40 || int64(len(outs)) != st.Started || st.Started != st.Ended() {
			t.Fatalf("stream=%v: %d outcomes, stats %+v", stream, len(outs), st)
		}
		if st.Integrity == 0 || st.Integrity == st.Completed || st.Errors != 0 {
			t.Fatalf("stream=%v: want some violations and no errors: %+v", stream, st)
		}
		for _, o := range outs {
			if o.Kind != outcome.KindCompleted || o.TTFT <= 0 || o.Tokens != 16 || !o.HasRoom || o.Source != outcome.SourceOpenLoop {
				t.Fatalf("stream=%v: %+v", stream, o)
			}
		}
	}
}

func TestOpenLoopStopsOnContext(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{})
	defer srv.Close()
	srv.SetHang(true)

	rec := newRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := RunOpenLoop(ctx, OpenLoopConfig{Endpoint: srv.URL, Sink: rec.sink, Options: OpenLoopOptions{
		HangTimeout: 100 * time.Millisecond, Phases: []LoadPhase{{Rate: 50, Duration: time.Minute}}}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("open loop took %v to stop", took)
	}
	kinds := map[outcome.Kind]int{}
	for _, o := range rec.all() {
		kinds[o.Kind]++
	}
	if kinds[outcome.KindHung] == 0 || kinds[outcome.KindCompleted] != 0 || kinds[outcome.KindError] != 0 {
		t.Fatalf("want hung (and stop-cancelled) requests only: %v", kinds)
	}
	if err := (OpenLoopOptions{Phases: []LoadPhase{{Duration: time.Second}}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "phases[0].rate") {
		t.Fatalf("zero rate must be refused (vegeta reads it as unlimited): %v", err)
	}
}

// TestRequestEndings drives one request against servers that misbehave in
// each way the protocol allows and checks the outcome it gets.
func TestRequestEndings(t *testing.T) {
	testkit.NoLeaks(t)
	chunk := func(s string) string {
		return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", s)
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    outcome.Kind
		status  int
		message string
		failure outcome.Failure
	}{
		{"completed", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, chunk("a")+chunk(" b")+`data: {"choices":[{"delta":{},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
		}, outcome.KindCompleted, 200, "", ""},
		{"status", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
		}, outcome.KindError, 429, "slow down", outcome.FailureHTTP},
		{"status with a body that is no error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream went away", http.StatusBadGateway)
		}, outcome.KindError, 502, "upstream went away", outcome.FailureBadBody},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, chunk("a")+`data: {"error":{"message":"kv transfer failed"}}`+"\n\n")
		}, outcome.KindError, 200, "kv transfer failed", outcome.FailureErrorEvent},
		{"event that is not JSON", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, chunk("a")+"data: {oops\n\n")
		}, outcome.KindError, 200, "decode stream event", outcome.FailureBadEvent},
		{"truncated", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, chunk("a"))
		}, outcome.KindError, 200, "truncated stream", outcome.FailureTruncated},
		{"last event without its blank line", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.TrimSuffix(chunk("a"), "\n"))
		}, outcome.KindError, 200, "truncated stream: ended without [DONE]", outcome.FailureTruncated},
		{"connection cut", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, chunk("a"))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server drops the connection mid-body
		}, outcome.KindError, 200, "read stream: unexpected EOF", outcome.FailureTransport},
		{"no answer", func(w http.ResponseWriter, r *http.Request) {
			panic(http.ErrAbortHandler) // a router that panics before its headers
		}, outcome.KindError, 0, "post chat completion", outcome.FailureTransport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			tr := newTransport(1)
			defer tr.CloseIdleConnections()
			var c Counters
			cl := caller{client: &http.Client{Transport: tr}, url: srv.URL, base: time.Now(),
				hang: 5 * time.Second, counters: &c}
			d := Decision{MaxTokens: 2}
			o, answer := cl.do(t.Context(), d, []model.Message{{Role: "user", Content: "x"}}, []byte(`{}`))
			if o.Kind != tc.want || o.Status != tc.status || !strings.Contains(o.Message, tc.message) || o.Failure != tc.failure {
				t.Fatalf("got %+v, want failure %q", o, tc.failure)
			}
			if tc.want == outcome.KindCompleted && (answer != "a b" || o.FinishReason != "length" || o.Tokens != 2) {
				t.Fatalf("answer %q, outcome %+v", answer, o)
			}
			if st := c.Snapshot(); st.Started != 1 || st.Ended() != 1 {
				t.Fatalf("counters: %+v", st)
			}
		})
	}
}

// A request whose client chose its bootstrap room names that room in its
// outcome even when it is cancelled before any answer comes (checks match
// cancels to rooms by it); an answer's room header, when one comes, says
// which room the gateway used.
func TestChosenRoomInOutcome(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("answer") == "" {
			select { // never answers: the client gives up first
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set(contract.RoomHeader, "77")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer func() {
		close(release) // the handler may not have seen its client go yet
		srv.Close()
	}()
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	var c Counters
	cl := caller{client: &http.Client{Transport: tr}, url: srv.URL, base: time.Now(), hang: 5 * time.Second, counters: &c}
	d := Decision{MaxTokens: 2, Room: 42, Cancel: outcome.CancelQueued, CancelDelay: 20 * time.Millisecond}
	o, _ := cl.do(t.Context(), d, []model.Message{{Role: "user", Content: "x"}}, []byte(`{}`))
	if o.Kind != outcome.KindCancelled || !o.HasRoom || o.Room != 42 {
		t.Fatalf("cancelled before any answer: got kind %s room %d (has %v), want cancelled in room 42", o.Kind, o.Room, o.HasRoom)
	}
	cl.url = srv.URL + "?answer=1"
	o, _ = cl.do(t.Context(), Decision{MaxTokens: 2, Room: 42}, []model.Message{{Role: "user", Content: "x"}}, []byte(`{}`))
	if !o.HasRoom || o.Room != 77 {
		t.Fatalf("answered with the gateway's room 77: got room %d (has %v)", o.Room, o.HasRoom)
	}
}
