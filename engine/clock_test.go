package engine_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// A role started with a clock step stamps every room event on the run's
// time line, not the host's: the request's handler and the scheduler's
// bootstrap deadline both read the role's clock. (With the live wall
// clock, a host clock step in mid-run moved every later event by the step
// and failed a fixed engine's run.)
func TestRoleClockStepMovesEveryRoomEvent(t *testing.T) {
	testkit.NoLeaks(t)
	const step = 24 * time.Hour
	p, err := engine.StartPrefillWith(t.Context(), contract.EngineConfig{BootstrapTimeout: 200 * time.Millisecond},
		engine.PrefillAddrs{}, engine.RoleOptions{ClockStep: step})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(t.Context()) })
	base := "http://" + p.Addrs().HTTP
	before := time.Now()
	// No decode sends metadata: the request ends at the bootstrap deadline.
	client := &http.Client{Timeout: 30 * time.Second} // a deadline read off the wrong clock never fires
	resp, err := client.Post(base+contract.PathGenerate, "application/json", strings.NewReader(`{"text":"hi","rid":"r1","bootstrap_room":7}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	after := time.Now()
	var rooms contract.RoomsResponse
	testkit.Eventually(t, 10*time.Second, func() error {
		r, err := client.Get(base + contract.PathDebugRooms)
		if err != nil {
			return err
		}
		defer r.Body.Close()
		rooms = contract.RoomsResponse{}
		if err := json.NewDecoder(r.Body).Decode(&rooms); err != nil {
			return err
		}
		if len(rooms.Cleared) != 1 {
			return fmt.Errorf("%d rooms cleared, want room 7's", len(rooms.Cleared))
		}
		return nil
	})
	rec := rooms.Cleared[0]
	if len(rec.Events) < 2 {
		t.Fatalf("room 7's events %+v: want its creation and its bootstrap deadline", rec.Events)
	}
	lo, hi := before.Add(-step), after.Add(-step)
	for _, at := range append([]time.Time{rec.Created, rec.Updated}, eventTimes(rec.Events)...) {
		if at.Before(lo) || at.After(hi) {
			t.Errorf("room 7 stamped %v: want within [%v, %v], the host's clock less the step; events %+v", at, lo, hi, rec.Events)
		}
	}
}

func eventTimes(evs []contract.Event) []time.Time {
	out := make([]time.Time, len(evs))
	for i, e := range evs {
		out[i] = e.At
	}
	return out
}
