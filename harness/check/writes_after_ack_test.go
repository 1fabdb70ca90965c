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
	created := func(ms, rank int) contract.Event {
		e := ev(ms, rank, contract.RoomEventStatus)
		e.State, e.Detail = contract.StateBootstrapping, "receiver "+contract.CreatedFor("retry")
		return e
	}
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
		{"a new request in the room since the ACK: a new life", []contract.Event{ack, created(6100, 0), stray}, nil, 0},
		{"a new request on the other rank only", []contract.Event{ack, created(6100, 1), stray}, nil, 1},
		{"an ACK of the new life", []contract.Event{ev(5000, 0, contract.RoomEventAbortAck), created(5500, 0), ack, stray}, nil, 1},
		{"a KV-link reset", []contract.Event{ack, stray}, fault("reset_peer(kv/0,up,0s)", faults.LayerNetwork), 0},
		{"a simulated KV chunk fault", []contract.Event{ack, stray}, fault("kv-chunks@kv/0", faults.LayerProtocol), 0},
		{"a control-link fault", []contract.Event{ack, stray}, fault("drop(control/0,abort)", faults.LayerProtocol), 1},
		{"decode stopped: its socket read late", []contract.Event{ack, stray}, fault("sigstop(decode)", faults.LayerProcess), 0},
		{"prefill restarted: the successor acknowledged", []contract.Event{ack, stray}, fault("sigkill(prefill,restart)", faults.LayerProcess), 0},
		{"prefill's scheduler stalled", []contract.Event{ack, stray}, fault("stall-scheduler(prefill/0)", faults.LayerEngine), 1},
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

// TestWritesAfterFailure: a KV chunk decode took more than the race
// window after prefill's rank recorded the room Failed is a write prefill
// began knowing it, unless something that holds a write under way was on
// when the room failed.
func TestWritesAfterFailure(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	pev := func(ms, rank int, kind, state, detail string) contract.Event {
		return contract.Event{At: at(ms), Side: contract.SidePrefill, Rank: rank, Kind: kind, State: state, Detail: detail}
	}
	created := pev(1000, 0, contract.RoomEventStatus, contract.StateBootstrapping, "sender "+contract.CreatedFor("r1"))
	failed := pev(2000, 0, contract.RoomEventStatus, contract.StateFailed, "scheduler: local abort")
	stray := func(ms, rank int) contract.Event {
		return contract.Event{At: at(ms), Side: contract.SideDecode, Rank: rank, Kind: contract.RoomEventStrayChunk, Detail: "chunk 0"}
	}
	hold := func(name string, layer faults.Layer, from, to float64) []schedule.Record {
		s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
		return []schedule.Record{{Window: 1, Fault: name, Layer: layer, Applied: true, Start: s(from), End: s(to)}}
	}
	for _, tc := range []struct {
		name    string
		prefill []contract.Event
		decode  []contract.Event
		faults  []schedule.Record
		latency time.Duration
		want    int
	}{
		{"a write long after the failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)}, nil, 0, 1},
		{"a write under way, each taking 2s to land", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)}, nil, 2 * time.Second, 0},
		{"a write under way at the failure", []contract.Event{created, failed}, []contract.Event{stray(2500, 0)}, nil, 0, 0},
		{"another rank's failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 1)}, nil, 0, 0},
		{"a new request for the room in between", []contract.Event{created, failed,
			pev(3000, 0, contract.RoomEventStatus, contract.StateBootstrapping, "sender "+contract.CreatedFor("r2"))}, []contract.Event{stray(3500, 0)}, nil, 0, 0},
		{"a later life on decode that prefill's record lacks", []contract.Event{created, failed},
			[]contract.Event{{At: at(3300), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping,
				Detail: "receiver " + contract.CreatedFor("r2")}, stray(3500, 0)}, nil, 0, 0},
		{"a new life on decode just after prefill failed it", []contract.Event{created, failed},
			[]contract.Event{{At: at(2000).Add(DefaultRaceWindow / 2), Side: contract.SideDecode, Kind: contract.RoomEventStatus, State: contract.StateBootstrapping,
				Detail: "receiver " + contract.CreatedFor("r2")}, stray(3500, 0)}, nil, 0, 1},
		{"writes paused with the write posted, at the failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("pause-transfer-writes(prefill/0/worker=-1)", faults.LayerEngine, 1.5, 3.4), 0, 0},
		{"writes paused only after the failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("pause-transfer-writes", faults.LayerEngine, 2.8, 3.4), 0, 1},
		{"workers paused before sending", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("pause-transfer-workers(prefill/0/worker=-1)", faults.LayerEngine, 1.5, 3.4), 0, 1},
		{"a KV-link reset at the failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("reset_peer(kv/0,up,0s)", faults.LayerNetwork, 1.9, 2.1), 0, 0},
		{"a control-link fault", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("drop(control/0,abort)", faults.LayerProtocol, 1, 4), 0, 1},
		{"prefill stopped at the failure", []contract.Event{created, failed}, []contract.Event{stray(3500, 0)},
			hold("sigstop(prefill)", faults.LayerProcess, 1.8, 3.3), 0, 0},
	} {
		v := &View{Run: RunInfo{BaseWall: base, Engine: &contract.EngineConfig{KVWriteLatency: tc.latency}}, Faults: tc.faults}
		got := v.writesAfterFailure(map[uint64]contract.RoomRecord{7: {Room: 7, Created: at(1000), Events: tc.prefill}},
			map[uint64]contract.RoomRecord{7: {Room: 7, Created: at(1000), Events: tc.decode}}, map[string]int64{})
		if len(got) != tc.want {
			t.Errorf("%s: %d findings %q, want %d", tc.name, len(got), got, tc.want)
			continue
		}
		if tc.want > 0 && !strings.Contains(got[0], "room 7 rank 0: decode took a KV write at 3.5s") {
			t.Errorf("%s: finding %q does not name the room, rank and time", tc.name, got[0])
		}
	}
}
