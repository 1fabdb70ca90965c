package zmtp

import (
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

func listen(t *testing.T) *Pull {
	t.Helper()
	p, err := Listen(testkit.Context(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) *Push {
	t.Helper()
	p, err := Dial(testkit.Context(t), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// waitDone waits for ch to close or fails after d: a prompt-return check
// that never sleeps.
func waitDone(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}
