package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// Every wire dialect serves exact answers and clears an aborted room on
// both sides (ABORT, ABORT_ACK and the failure notice all understood), and
// neither side refuses a single control message as malformed.
func TestWireDialects(t *testing.T) {
	testkit.NoLeaks(t)
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			cfg := contract.EngineConfig{Wire: w, PrefillTokensPerSec: 2000}
			c := testcluster.Start(t, cfg)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Go(func() {
					msgs := prompt(100 + i)
					cr := testkit.Chat(t.Context(), c.Endpoint(), msgs, 6)
					if cr.Err != nil {
						errs <- fmt.Errorf("request %d: %w", i, cr.Err)
					} else if want, got := model.ExpectedChat(msgs, 6), cr.Text; got != want {
						errs <- fmt.Errorf("request %d: got %q want %q", i, got, want)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			room := cancelDuringPrefill(t, c, forwardFor(200, 3*time.Second, cfg.PrefillTokensPerSec))
			testkit.Eventually(t, 10*time.Second, func() error {
				for _, base := range c.EngineURLs() {
					rec, held, err := testkit.RoomOn(t.Context(), base, room)
					if err != nil || held {
						return fmt.Errorf("room %d not yet cleared on %s", room, base)
					}
					if err := failedThenCleared(rec); err != nil {
						return err
					}
				}
				return testkit.Drained(t.Context(), c)
			})
			// Decode sent the ABORT after its metadata, and freed the pages
			// on prefill's ABORT_ACK, not on its ack timeout.
			rec, _, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], room)
			must(t, err)
			if !slices.ContainsFunc(rec.Events, func(e contract.Event) bool { return e.Kind == "abort-ack" }) {
				t.Errorf("decode room %d saw no ABORT_ACK: %+v", room, rec.Events)
			}
			for _, u := range c.MetricsURLs() {
				if n, err := testkit.Gauge(t.Context(), u, contract.MetricMalformedControl); err != nil || n != 0 {
					t.Errorf("%s: %s = %v (%v), want 0", u, contract.MetricMalformedControl, n, err)
				}
			}
		})
	}
}
