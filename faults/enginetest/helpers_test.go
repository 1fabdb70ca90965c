package enginetest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// shortDeadlines makes the fixed engine's backstops (bootstrap, inflight,
// waiting, ack) fire after a second, so lost messages heal quickly.
func shortDeadlines(cfg contract.EngineConfig) contract.EngineConfig {
	cfg.BootstrapTimeout, cfg.InflightTimeout, cfg.WaitingTimeout, cfg.AckTimeout = time.Second, time.Second, time.Second, time.Second
	return cfg
}

// drainAllAbortsLost is how long the engine may take to drain when every
// ABORT is lost: decode resends each one core.AbortResends times, an ACK
// timeout apart, before it frees the room's pages, and the rooms' own
// deadlines run too; the rest is slack for a loaded machine.
func drainAllAbortsLost(cfg contract.EngineConfig) time.Duration {
	return time.Duration(core.AbortResends+1)*cfg.AckTimeout + cfg.WaitingTimeout + cfg.InflightTimeout + 5*time.Second
}

func eventIndex(rec contract.RoomRecord, kinds ...string) int {
	return slices.IndexFunc(rec.Events, func(e contract.Event) bool { return slices.Contains(kinds, e.Kind) })
}

func eventKinds(rec contract.RoomRecord) []string {
	var out []string
	for _, e := range rec.Events {
		out = append(out, e.Kind+":"+e.State)
	}
	return out
}

// prompt is a chat long enough to span several KV chunks.
func prompt(tag string) []model.Message {
	return []model.Message{
		{Role: "system", Content: strings.Repeat("You are a coding agent working in a large repository. ", 20)},
		{Role: "user", Content: "task " + tag + ": refactor the module and run the tests"},
	}
}

// longText is a /generate prompt of a few hundred tokens.
func longText(tag string) string {
	return strings.Repeat(tag+" edits the parser and reruns the failing test suite ", 20)
}

// healthyAfter is the check every test ends with: once the fault is healed,
// the engine holds nothing, a fresh request completes with exactly the
// model's answer, and the gauges drain to 0 again.
func healthyAfter(t *testing.T, c *engine.Cluster, drainWithin time.Duration) {
	t.Helper()
	testkit.Eventually(t, drainWithin, func() error { return testkit.Drained(t.Context(), c) })
	if err := c.Health(t.Context()); err != nil {
		t.Fatalf("health after heal: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	fresh := []model.Message{{Role: "user", Content: "a fresh request after the fault healed"}} // short: fits a slow prefill's deadlines
	if err := testkit.ChatExact(ctx, c.Endpoint(), fresh, 8); err != nil {
		t.Fatalf("fresh request after heal: %v", err)
	}
	testkit.Eventually(t, drainWithin, func() error { return testkit.Drained(t.Context(), c) })
}
