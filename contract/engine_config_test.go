package contract

import (
	"strings"
	"testing"
)

// The wire dialect defaults to NIXL and a bad one is refused naming the
// field and the valid values.
func TestConfigWire(t *testing.T) {
	t.Parallel()
	c, _, err := EngineConfig{}.Resolve()
	if err != nil || c.Wire != WireNIXL {
		t.Fatalf("default wire %q (%v), want nixl", c.Wire, err)
	}
	c, _, err = EngineConfig{Wire: WireMooncake}.Resolve()
	if err != nil || c.Wire != WireMooncake {
		t.Fatalf("wire %q (%v), want mooncake", c.Wire, err)
	}
	_, _, err = EngineConfig{Wire: "ucx"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "wire") || !strings.Contains(err.Error(), "nixl, mooncake") {
		t.Fatalf("wire ucx: %v, want an error naming the field and the valid dialects", err)
	}
}
