package testcluster

import (
	"context"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
)

// Start runs the in-process cluster and closes it when the test ends.
func Start(t testing.TB, cfg contract.EngineConfig) *engine.Cluster {
	t.Helper()
	c, err := engine.StartCluster(t.Context(), cfg, nil)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}
