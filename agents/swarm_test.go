package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/internal/fakeserver"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// recorder is a test Sink that keeps every outcome and every decision.
type recorder struct {
	mu        sync.Mutex
	outcomes  []outcome.Outcome
	decisions map[[2]int][]Decision // by (agent, incarnation)
}

func newRecorder() *recorder { return &recorder{decisions: map[[2]int][]Decision{}} }

func (r *recorder) sink(o outcome.Outcome) {
	r.mu.Lock()
	r.outcomes = append(r.outcomes, o)
	r.mu.Unlock()
}

func (r *recorder) trace(d Decision) {
	r.mu.Lock()
	k := [2]int{d.Agent, d.Incarnation}
	r.decisions[k] = append(r.decisions[k], d)
	r.mu.Unlock()
}

func (r *recorder) all() []outcome.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outcome.Outcome(nil), r.outcomes...)
}

// runSwarm runs a swarm to its Duration and fails if it does not stop
// within limit of it.
func runSwarm(t *testing.T, cfg Config, limit time.Duration) *Swarm {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), cfg.Options.Duration+limit)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("swarm did not stop within %v of its duration: %v", limit, err)
	}
	return s
}

// checkAccounting asserts every request has exactly one outcome.
func checkAccounting(t *testing.T, s *Swarm, outs []outcome.Outcome) {
	t.Helper()
	st := s.Stats()
	if st.InFlight != 0 || st.Started != st.Ended() || int64(len(outs)) != st.Started {
		t.Fatalf("accounting: stats %+v, %d outcomes", st, len(outs))
	}
	seen := map[string]bool{}
	for _, o := range outs {
		k := fmt.Sprint(o.Source, o.Agent, o.Incarnation, o.Session, o.Turn, o.Sub, o.Retry)
		if seen[k] {
			t.Fatalf("two outcomes for request %s", k)
		}
		seen[k] = true
		if o.End < o.Start {
			t.Fatalf("outcome ends before it starts: %+v", o)
		}
	}
}

func TestSwarmOpenCode30(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{TokenDelay: time.Millisecond, FirstTokenDelay: 20 * time.Millisecond})
	defer srv.Close()

	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	o = o.Scaled(0.05) // think 100ms, kills every 3s per agent, queued cancels within 15ms
	o.Duration = 3 * time.Second
	rec := newRecorder()
	const seed = 42
	s := runSwarm(t, Config{Endpoint: srv.URL, Seed: seed, Options: o, Sink: rec.sink,
		Check: ModelCheck, Trace: rec.trace}, 5*time.Second)

	outs := rec.all()
	checkAccounting(t, s, outs)
	st := s.Stats()
	t.Logf("stats: %+v", st)
	if st.Completed == 0 || st.CancelledQueued == 0 || st.CancelledDecode == 0 ||
		st.Kills == 0 || st.Restarts == 0 {
		t.Fatalf("want completions, cancels in both phases, kills and restarts: %+v", st)
	}
	if st.Integrity != 0 || st.Hung != 0 || st.Errors != 0 {
		t.Fatalf("fake server is correct and fast, yet: %+v", st)
	}
	reasons := map[outcome.Reason]int{}
	for _, o := range outs {
		reasons[o.Reason]++
		if o.Kind == outcome.KindCompleted && (o.Tokens != o.MaxTokens || o.TTFT <= 0 || !o.HasRoom) {
			t.Fatalf("completed outcome incomplete: %+v", o)
		}
	}
	if reasons[outcome.ReasonCancel] == 0 || reasons[outcome.ReasonKill] == 0 {
		t.Fatalf("want planned cancels and kills among reasons: %v", reasons)
	}
	// The run drew exactly the decisions Plan predicts, whatever the timing.
	for k, got := range rec.decisions {
		inc, want := Plan(seed, o, k[0], k[1], len(got))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("agent %d incarnation %d: run decisions differ from Plan", k[0], k[1])
		}
		if inc.KillAfter == 0 {
			t.Fatalf("opencode-30 incarnation without a kill time: %+v", inc)
		}
	}
}

func TestSwarmHangingServer(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{})
	defer srv.Close()
	srv.SetHang(true)

	const hang = 200 * time.Millisecond
	rec := newRecorder()
	start := time.Now()
	s := runSwarm(t, Config{Endpoint: srv.URL, Seed: 7, Sink: rec.sink, Options: Options{
		Agents: 5, Duration: time.Second, HangTimeout: hang, SystemPromptWords: 100,
	}}, 2*time.Second)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("swarm took %v to stop after a 1s run", took)
	}
	outs := rec.all()
	checkAccounting(t, s, outs)
	hung := 0
	for _, o := range outs {
		switch o.Kind {
		case outcome.KindHung:
			hung++
			if d := o.End - o.Start; d < hang || d > hang+500*time.Millisecond {
				t.Fatalf("hung after %v, want about %v: %+v", d, hang, o)
			}
			if o.Phase != outcome.PhaseQueued || o.Tokens != 0 {
				t.Fatalf("hung request with bytes: %+v", o)
			}
		case outcome.KindCancelled:
			if o.Reason != outcome.ReasonStop {
				t.Fatalf("unexpected cancel: %+v", o)
			}
		default:
			t.Fatalf("a hanging server gave %+v", o)
		}
	}
	if hung < 5 || int64(hung) != s.Stats().Hung {
		t.Fatalf("want >= 5 hung requests, got %d (stats %+v)", hung, s.Stats())
	}
}

func TestSwarmIntegrityViolation(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{})
	defer srv.Close()
	srv.SetCorruptEvery(3)

	rec := newRecorder()
	s := runSwarm(t, Config{Endpoint: srv.URL, Seed: 9, Sink: rec.sink, Check: ModelCheck, Options: Options{
		Agents: 3, Duration: 300 * time.Millisecond, SystemPromptWords: 200, MaxTokens: 8,
	}}, 2*time.Second)
	outs := rec.all()
	checkAccounting(t, s, outs)
	bad := 0
	for _, o := range outs {
		if o.Integrity == "" {
			continue
		}
		bad++
		if o.Kind != outcome.KindCompleted || o.Expected == o.Got || o.Expected == "" || !o.HasRoom {
			t.Fatalf("violation lacks detail: %+v", o)
		}
	}
	if bad == 0 || int64(bad) != s.Stats().Integrity || s.Stats().Integrity == s.Stats().Completed {
		t.Fatalf("want some (not all) violations: %d recorded, stats %+v", bad, s.Stats())
	}
}

func TestSwarmKillAll(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{TokenDelay: 5 * time.Millisecond})
	defer srv.Close()

	rec := newRecorder()
	s, err := New(Config{Endpoint: srv.URL, Seed: 3, Sink: rec.sink, Options: Options{
		Agents: 20, SystemPromptWords: 100, MaxTokens: 200, RestartDelay: 10 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.KillAll(t.Context()); err == nil {
		t.Fatal("KillAll before Start must fail")
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { return s.Stats().InFlight >= 20 }, "20 requests in flight")
	<-s.Ready()
	n, err := s.KillAll(t.Context())
	if err != nil || n != 20 {
		t.Fatalf("KillAll = %d, %v; want 20 agents", n, err)
	}
	waitFor(t, 5*time.Second, func() bool { return s.Stats().Restarts >= 20 }, "every agent restarted")
	s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	outs := rec.all()
	checkAccounting(t, s, outs)
	killed := 0
	for _, o := range outs {
		if o.Reason == outcome.ReasonKillAll {
			killed++
		}
	}
	if killed < 20 || s.Stats().KillAlls != 1 {
		t.Fatalf("want >= 20 requests cancelled by the kill-all, got %d (stats %+v)", killed, s.Stats())
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// With retry_same_rid_rate, a request cancelled before its first token is
// sent again at once with the same rid on the wire, and its second send
// is an outcome of its own, marked Retry and not cancelled.
func TestSwarmRetriesWithSameRid(t *testing.T) {
	testkit.NoLeaks(t)
	srv := fakeserver.New(fakeserver.Options{TokenDelay: time.Millisecond, FirstTokenDelay: 150 * time.Millisecond})
	defer srv.Close()
	var mu sync.Mutex
	sent := map[string]int{} // rid -> sends seen on the wire
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Rid string `json:"rid"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		sent[req.Rid]++
		mu.Unlock()
		up, err := http.NewRequestWithContext(r.Context(), r.Method, srv.URL+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		up.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(up)
		if err != nil {
			return // the client went away
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	defer front.Close()

	o := Options{Agents: 4, Duration: 2 * time.Second, MaxTokens: 4, CancelQueuedRate: 0.5, CancelQueuedDelay: 50 * time.Millisecond,
		RetrySameRidRate: 1, SystemPromptWords: 20, UserPromptWords: 5, ToolOutputWords: 5}
	rec := newRecorder()
	s := runSwarm(t, Config{Endpoint: front.URL, Seed: 7, Options: o, Sink: rec.sink, Check: ModelCheck}, 5*time.Second)
	outs := rec.all()
	checkAccounting(t, s, outs)
	first := map[string]outcome.Outcome{}
	retried := 0
	for _, o := range outs {
		if o.Rid == "" {
			continue
		}
		if !o.Retry {
			first[o.Rid] = o
			continue
		}
		retried++
		f, ok := first[o.Rid]
		switch {
		case !ok || f.Kind != outcome.KindCancelled || f.Planned != outcome.CancelQueued:
			t.Errorf("retry of %s without its cancelled first send (first: %+v)", o.Rid, f)
		case o.Planned != "":
			t.Errorf("retry of %s planned a cancel (%q)", o.Rid, o.Planned)
		case o.Kind != outcome.KindCompleted && o.Reason != outcome.ReasonStop:
			t.Errorf("retry of %s: %s (%s); want a completed answer (or the swarm's stop)", o.Rid, o.Kind, o.Reason)
		}
		mu.Lock()
		n := sent[o.Rid]
		mu.Unlock()
		if n != 2 {
			t.Errorf("rid %s went on the wire %d times, want 2", o.Rid, n)
		}
	}
	if retried == 0 {
		t.Fatalf("no retry in %d outcomes", len(outs))
	}
	mu.Lock()
	defer mu.Unlock()
	if sent[""] == 0 {
		t.Error("every request carried a rid; only the retried ones should")
	}
}
