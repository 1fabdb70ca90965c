package testkit

import (
	"testing"

	"go.uber.org/goleak"
)

// NoLeaks fails t if goroutines started during the test are still running
// when it ends. It must be the test's first call: its cleanup, registered
// first, runs last, after the cluster, the swarm and every client
// transport have closed. Goroutines running before the call are ignored.
func NoLeaks(t testing.TB, extra ...goleak.Option) {
	t.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, extra...)
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// VerifyTestMain runs a package's tests and fails the run if any goroutine
// is left when they end: call it from TestMain.
func VerifyTestMain(m *testing.M, extra ...goleak.Option) {
	goleak.VerifyTestMain(m, extra...)
}
