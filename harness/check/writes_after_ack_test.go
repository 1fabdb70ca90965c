package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// TestWritesAfterAck: a KV chunk decode's rank took after that rank's
// prefill acknowledged the room's ABORT is a write prefill began after
// the ABORT, unless a fault on a KV link could have delivered it late.
func TestWritesAfterAck(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms, rank int, kind string) contract.Event {
		return contract.Event{At: at(ms), Side: contract.SideDecode, Rank: rank, Kind: kind}
	}
	ack, stray := ev(6000, 0, contract.RoomEventAbortAck), ev(6300, 0, contract.RoomEventStrayChunk)
	fault := func(name string, layer faults.Layer) []schedule.Record {
		return []schedule.Record{{Window: 1, Fault: name, Layer: layer, Applied: true, Start: 5 * time.Second, End: 7 * time.Second}}
	}
	for _, tc := range []struct {
		name   string
		events []contract.Event
		faults []schedule.Record
		want   int
	}{
		{"a chunk after the ACK", []contract.Event{ack, stray}, nil, 1},
		{"a chunk before the ACK (in flight at the ABORT)", []contract.Event{ev(5900, 0, contract.RoomEventStrayChunk), ack}, nil, 0},
		{"the other rank's ACK", []contract.Event{ev(6000, 1, contract.RoomEventAbortAck), stray}, nil, 0},
		{"two chunks after it: one finding", []contract.Event{ack, stray, ev(6400, 0, contract.RoomEventStrayChunk)}, nil, 1},
		{"a KV-link reset", []contract.Event{ack, stray}, fault("reset_peer(kv/0,up,0s)", faults.LayerNetwork), 0},
		{"a simulated KV chunk fault", []contract.Event{ack, stray}, fault("kv-chunks@kv/0", faults.LayerProtocol), 0},
		{"a control-link fault", []contract.Event{ack, stray}, fault("drop(control/0,abort)", faults.LayerProtocol), 1},
		{"a process fault", []contract.Event{ack, stray}, fault("sigstop(prefill)", faults.LayerProcess), 1},
	} {
		v := &View{Run: RunInfo{BaseWall: base}, Faults: tc.faults}
		ev := map[string]int64{}
		got := v.writesAfterAck(map[uint64]contract.RoomRecord{7: {Room: 7, Created: at(1000), Events: tc.events}}, ev)
		if len(got) != tc.want {
			t.Errorf("%s: %d findings %q, want %d", tc.name, len(got), got, tc.want)
			continue
		}
		if tc.want > 0 && !strings.Contains(got[0], "room 7 rank 0: decode took a KV write at 6.3s") {
			t.Errorf("%s: finding %q does not name the room, rank and time", tc.name, got[0])
		}
		if tc.faults != nil && tc.want == 0 && ev["writes_after_ack_excused"] != 1 {
			t.Errorf("%s: evidence %v, want writes_after_ack_excused 1", tc.name, ev)
		}
	}
}
