package harness

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit/hostile"
)

// TestProbeOnceBounded: a liveness probe whose answer is a GiB fails at
// the 1 MiB limit (it was read whole into memory); a well-formed answer
// passes.
func TestProbeOnceBounded(t *testing.T) {
	for b, want := range map[hostile.Behaviour]string{hostile.Huge: "answer over 1048576 bytes", hostile.Healthy: ""} {
		s, err := hostile.Start(hostile.Options{Behaviour: b})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c := &http.Client{}
		err = probeOnce(t.Context(), c, s.URL(), "", 1, 0, 20*time.Second, false)
		c.CloseIdleConnections()
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Fatalf("%s: want %q, got %v", b, want, err)
		}
	}
}
