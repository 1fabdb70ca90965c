package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Every wire dialect serves exact answers and clears an aborted room on
// both sides (ABORT, ABORT_ACK and the failure notice all understood), and
// neither side refuses a single control message as malformed.
func TestWireDialects(t *testing.T) {
	noLeaks(t)
	for _, w := range contract.Wires() {
		t.Run(string(w), func(t *testing.T) {
			c := startCluster(t, engine.Config{Wire: w, PrefillTokensPerSec: 2000})
			client := httpClient(t)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Go(func() {
					msgs := prompt(100 + i)
					got, err := chat(t.Context(), client, c.Endpoint(), msgs, 6)
					if err != nil {
						errs <- fmt.Errorf("request %d: %w", i, err)
					} else if want := model.ExpectedChat(msgs, 6); got != want {
						errs <- fmt.Errorf("request %d: got %q want %q", i, got, want)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			room := cancelDuringPrefill(t, c, prompt(200))
			eventually(t, 10*time.Second, func() error {
				for _, base := range c.EngineURLs() {
					rec, ok := findRoom(rooms(t, base).Cleared, room)
					if !ok {
						return fmt.Errorf("room %d not yet cleared on %s", room, base)
					}
					if err := failedThenCleared(rec); err != nil {
						return err
					}
				}
				return drained(t.Context(), c)
			})
			// Decode sent the ABORT after its metadata, and freed the pages
			// on prefill's ABORT_ACK, not on its ack timeout.
			rec, _ := findRoom(rooms(t, c.EngineURLs()[1]).Cleared, room)
			if !slices.ContainsFunc(rec.Events, func(e contract.Event) bool { return e.Kind == "abort-ack" }) {
				t.Errorf("decode room %d saw no ABORT_ACK: %+v", room, rec.Events)
			}
			for _, u := range c.MetricsURLs() {
				if n, err := gauge(t.Context(), u, contract.MetricMalformedControl); err != nil || n != 0 {
					t.Errorf("%s: %s = %v (%v), want 0", u, contract.MetricMalformedControl, n, err)
				}
			}
		})
	}
}
