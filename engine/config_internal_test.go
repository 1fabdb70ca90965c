package engine

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// The wire dialect defaults to NIXL and a bad one is refused naming the
// field and the valid values.
func TestConfigWire(t *testing.T) {
	t.Parallel()
	c, _, err := Config{}.withDefaults()
	if err != nil || c.Wire != contract.WireNIXL {
		t.Fatalf("default wire %q (%v), want nixl", c.Wire, err)
	}
	c, _, err = Config{Wire: contract.WireMooncake}.withDefaults()
	if err != nil || c.Wire != contract.WireMooncake {
		t.Fatalf("wire %q (%v), want mooncake", c.Wire, err)
	}
	_, _, err = Config{Wire: "ucx"}.withDefaults()
	if err == nil || !strings.Contains(err.Error(), "wire") || !strings.Contains(err.Error(), "nixl, mooncake") {
		t.Fatalf("wire ucx: %v, want an error naming the field and the valid dialects", err)
	}
}
