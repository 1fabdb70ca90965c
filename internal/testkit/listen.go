package testkit

import (
	"net"
	"testing"
)

// Listen returns a TCP listener on a free loopback port (127.0.0.1:0),
// closed when the test ends: tests never pick fixed ports.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on a free loopback port: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}
