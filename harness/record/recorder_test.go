package record

import (
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// TestSnapLogsEachEndOnce: a cleared room goes into the log once with its
// history, again only when a late event changed it; held rooms lose their
// histories in periodic snapshots and keep them in the final one.
func TestSnapLogsEachEndOnce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ev := []contract.Event{{At: t0, Kind: "clear"}}
	held := func() []contract.RoomRecord {
		return []contract.RoomRecord{{Room: 9, State: contract.StateBootstrapping, Events: ev}}
	}
	r := &Recorder{}
	s := r.snap("e", contract.RoomsResponse{Role: "prefill", Held: held(),
		Cleared: []contract.RoomRecord{{Room: 1, Updated: t0, Events: ev}, {Room: 2, Updated: t0, Events: ev}}}, nil, false)
	if len(s.Ended) != 2 || len(s.Ended[0].Events) != 1 || s.Held[0].Events != nil || s.Cleared != 2 {
		t.Fatalf("first snapshot: %+v", s)
	}
	s = r.snap("e", contract.RoomsResponse{Role: "prefill",
		Cleared: []contract.RoomRecord{{Room: 1, Updated: t0, Events: ev}, {Room: 2, Updated: t0.Add(time.Second), Events: ev},
			{Room: 3, Updated: t0, Events: ev}}}, nil, false)
	if len(s.Ended) != 2 || s.Ended[0].Room != 2 || s.Ended[1].Room != 3 {
		t.Fatalf("second snapshot logs %+v, want rooms 2 (late event) and 3 (new)", s.Ended)
	}
	if s = r.snap("other", contract.RoomsResponse{Cleared: []contract.RoomRecord{{Room: 1, Updated: t0}}}, nil, false); len(s.Ended) != 1 {
		t.Fatalf("another source's room 1: %+v", s.Ended)
	}
	if s = r.snap("e", contract.RoomsResponse{Held: held()}, nil, true); !s.Final || len(s.Held[0].Events) != 1 {
		t.Fatalf("final snapshot: %+v", s)
	}
}
