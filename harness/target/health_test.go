package target

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit/hostile"
)

// TestProbeHealthRefusesBadBodies: a 200 whose body is cut short (a close
// before its Content-Length, a reset) or never ends (an endless stream, a
// GiB) is not healthy, and the probe says so at once, not at its deadline.
func TestProbeHealthRefusesBadBodies(t *testing.T) {
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok") // then FIN, 98 bytes short
	}))
	t.Cleanup(cut.Close)
	urls := map[string]string{"cut": cut.URL}
	for _, b := range []hostile.Behaviour{hostile.Endless, hostile.Huge, hostile.Reset, hostile.Healthy} {
		s, err := hostile.Start(hostile.Options{Behaviour: b})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		urls[string(b)] = s.URL()
	}
	for name, want := range map[string]string{
		"cut":                   "the body was cut after 2 bytes: unexpected EOF",
		string(hostile.Reset):   "get ",
		string(hostile.Endless): "the body goes on past 65536 bytes",
		string(hostile.Huge):    "the body goes on past 65536 bytes",
		string(hostile.Healthy): "",
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			start := time.Now()
			rep := ProbeHealth(ctx, urls[name], []string{urls[name]})
			took := time.Since(start)
			err := rep.Err()
			switch {
			case want == "" && err != nil:
				t.Fatalf("healthy target: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Fatalf("want an error with %q, got %v (%s)", want, err, rep)
			case took > 10*time.Second:
				t.Fatalf("took %v: the probe read on to its deadline", took)
			}
		})
	}
}
