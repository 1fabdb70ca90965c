package hostile_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/hostile"
)

// get GETs path with a short client timeout and returns the status, up to
// max bytes of the body and the error that ended the read (nil at EOF).
func get(t *testing.T, s *hostile.Server, path string, max int64) (int, string, error) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(s.URL() + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max))
	return resp.StatusCode, string(b), err
}

// TestBehaviours: each server does what its behaviour names, and Close
// leaves no goroutine and no connection.
func TestBehaviours(t *testing.T) {
	testkit.NoLeaks(t)
	start := func(o hostile.Options) *hostile.Server {
		s, err := hostile.Start(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
			if n := s.OpenConns(); n != 0 {
				t.Errorf("%s: %d connections open after Close", s.Behaviour(), n)
			}
		})
		return s
	}
	t.Run("healthy", func(t *testing.T) {
		s := start(hostile.Options{})
		if st, body, err := get(t, s, "/metrics", 1<<20); st != 200 || err != nil || !strings.Contains(body, "sglang:num_running_reqs{") {
			t.Fatalf("metrics: %d %v\n%s", st, err, body)
		}
		if st, body, err := get(t, s, "/v1/chat/completions", 1<<20); st != 200 || err != nil || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Fatalf("chat: %d %v\n%s", st, err, body)
		}
	})
	t.Run("silent", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Silent})
		c := &http.Client{Timeout: 200 * time.Millisecond}
		defer c.CloseIdleConnections()
		if _, err := c.Get(s.URL() + "/health"); err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("want a client timeout, got %v", err)
		}
	})
	t.Run("silent+health-ok", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Silent, HealthOK: true})
		if st, body, err := get(t, s, "/readiness", 1<<10); st != 200 || err != nil || body != "ok\n" {
			t.Fatalf("readiness: %d %v %q", st, err, body)
		}
		c := &http.Client{Timeout: 200 * time.Millisecond}
		defer c.CloseIdleConnections()
		if _, err := c.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`)); err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("chat: want a client timeout, got %v", err)
		}
		// The client gave up: the server notices and holds nothing open.
		testkit.Eventually(t, 5*time.Second, func() error {
			if n := s.OpenConns(); n != 0 {
				return fmt.Errorf("%d connections open after the client left", n)
			}
			return nil
		})
		if s.Name() != "silent+health-ok" {
			t.Fatalf("name %q", s.Name())
		}
	})
	t.Run("endless", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Endless, Tick: time.Millisecond})
		// 256 KiB read and the body still has not ended.
		if st, body, err := get(t, s, "/metrics", 256<<10); st != 200 || err != nil || len(body) != 256<<10 {
			t.Fatalf("metrics: %d %v, %d bytes", st, err, len(body))
		}
	})
	t.Run("huge", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Huge, HugeBytes: 3<<20 + 7})
		st, body, err := get(t, s, "/debug/rooms", 8<<20)
		if st != 200 || err != nil || len(body) != 3<<20+7 || !strings.HasPrefix(body, `{"role":"decode","held":[{"room":1,`) {
			t.Fatalf("rooms: %d %v, %d bytes: %.60s", st, err, len(body), body)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Trickle, Tick: time.Millisecond})
		if st, body, err := get(t, s, "/health", 1<<10); st != 200 || err != nil || body != "ok\n" {
			t.Fatalf("health: %d %v %q", st, err, body)
		}
	})
	t.Run("reset", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Reset})
		st, _, err := get(t, s, "/health", 1<<20)
		if err == nil || (st != 0 && st != 200) {
			t.Fatalf("want 200 then a read error (or a reset before the headers), got %d %v", st, err)
		}
		if st == 200 && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("want the body cut by a reset, got %v", err)
		}
	})
	t.Run("flap", func(t *testing.T) {
		s := start(hostile.Options{Behaviour: hostile.Flap})
		var got []int
		for range 4 {
			st, _, _ := get(t, s, "/readiness", 1<<10)
			got = append(got, st)
		}
		if got[0] != 200 || got[1] != 503 || got[2] != 200 || got[3] != 503 {
			t.Fatalf("statuses %v, want 200 503 200 503", got)
		}
	})
	for _, b := range []hostile.Behaviour{hostile.NaNMetrics, hostile.InfMetrics, hostile.NegativeGauges, hostile.DuplicateSeries, hostile.GarbageMetrics} {
		t.Run(string(b), func(t *testing.T) {
			s := start(hostile.Options{Behaviour: b})
			want := map[hostile.Behaviour]string{hostile.NaNMetrics: "} NaN\n", hostile.InfMetrics: "} +Inf\n",
				hostile.NegativeGauges: "} -1\n", hostile.DuplicateSeries: "} 3\n", hostile.GarbageMetrics: "garbage"}[b]
			if st, body, err := get(t, s, "/metrics", 1<<20); st != 200 || err != nil || !strings.Contains(body, want) {
				t.Fatalf("metrics: %d %v, want %q in\n%s", st, err, want, body)
			}
			if st, _, err := get(t, s, "/readiness", 1<<10); st != 200 || err != nil {
				t.Fatalf("readiness: %d %v", st, err)
			}
		})
	}
	if _, err := hostile.Parse("sulky"); err == nil || !strings.Contains(err.Error(), `"sulky"`) {
		t.Fatalf("Parse(sulky): %v", err)
	}
}
