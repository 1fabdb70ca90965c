package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// decodeRoom is a held decode record on ranks 0 and 1, opened by its
// request, with the given extra event kinds and status.
func decodeRoom(room uint64, state string, kinds ...string) contract.RoomRecord {
	evs := []contract.Event{{Side: "decode", Kind: contract.RoomEventStatus, State: contract.StateBootstrapping, Detail: "receiver: receiver " + contract.CreatedFor("r")}}
	for _, k := range kinds {
		evs = append(evs, contract.Event{Side: "decode", Kind: k})
	}
	return contract.RoomRecord{Room: room, Side: "decode", State: state, Ranks: map[int]string{0: state, 1: state}, Events: evs}
}

// decodeQueues is a decode scrape of two ranks reading prealloc, transfer
// and running on each.
func decodeQueues(prealloc, transfer, running float64) *Scrape {
	s := &Scrape{EngineType: "decode", Gauges: map[string]float64{}, Ranks: map[string]map[string]float64{}}
	for g, v := range map[string]float64{contract.MetricDecodePreallocQueue: prealloc, contract.MetricDecodeTransferQueue: transfer,
		contract.MetricRunning: running, contract.MetricQueue: 0, contract.MetricTokenUsage: 0} {
		s.Gauges[g] = 2 * v
		s.Ranks[g] = map[string]float64{"tp_rank=0": v, "tp_rank=1": v}
	}
	return s
}

// perRankOf is sc's gauges per TP rank, as /debug/rooms gives its queues.
func perRankOf(sc *Scrape) []map[string]float64 {
	out := []map[string]float64{{}, {}}
	for g, series := range sc.Ranks {
		out[0][g], out[1][g] = series["tp_rank=0"], series["tp_rank=1"]
	}
	return out
}

// The queue gauges are judged against the rooms held at the same instant,
// both ways: a gauge that reads another queue, one that lost a room and
// one that kept a request after its room ended fail, naming the gauge,
// the rank and the rooms; readings within the bounds pass, a room whose
// status just changed may be in either queue, and a snapshot without
// gauges read at its own instant (a live target's) is not judged.
func TestQueueGaugesAgreeWithRooms(t *testing.T) {
	t.Parallel()
	held := []contract.RoomRecord{
		decodeRoom(1, contract.StateWaitingForInput),                                 // waiting for pages
		decodeRoom(2, contract.StateWaitingForInput, contract.RoomEventMetadataSent), // waiting for KV
		decodeRoom(3, contract.StateSuccess, contract.RoomEventMetadataSent),         // KV in, not yet committed
		decodeRoom(4, contract.StateWaitingForInput, contract.RoomEventMetadataSent, contract.RoomEventCommitted),
		decodeRoom(5, contract.StateFailed), // failed while waiting for pages: either queue until the next step
	}
	for _, tc := range []struct {
		name                        string
		prealloc, transfer, running float64
		live                        bool
		want                        Status
		names                       string
	}{
		{"each queue as its rooms say", 1, 2, 1, false, Pass, ""},
		{"the failed room moved on", 1, 3, 1, false, Pass, ""},
		{"the failed room still waits for pages", 2, 2, 1, false, Pass, ""},
		{"transfer gauge reads the prealloc queue", 1, 1, 1, false, Fail, contract.MetricDecodeTransferQueue + "{tp_rank=0} reads 1, but 2 held rooms must be in it"},
		{"a running request lost", 1, 2, 0, false, Fail, contract.MetricRunning + "{tp_rank=0} reads 0, but 1 held rooms must be in it"},
		{"a request queued after its room ended", 3, 2, 1, false, Fail, contract.MetricDecodePreallocQueue + "{tp_rank=0} reads 3, but only 2 held rooms may be in it"},
		{"a live snapshot: not judged", 1, 1, 1, true, Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := time.Second
			mid, idle := decodeQueues(tc.prealloc, tc.transfer, tc.running), decodeQueues(0, 0, 0)
			// A periodic snapshot keeps the facts, not the events.
			snap, final := &RoomsSnap{Role: "decode", Held: slices.Clone(held)}, &RoomsSnap{Role: "decode", Final: true}
			if !tc.live {
				snap.SetQueues(held, perRankOf(mid))
				final.SetQueues(nil, perRankOf(idle))
			}
			for i := range snap.Held {
				snap.Held[i].Events = nil
			}
			v := NewView([]Event{
				{T: 0, Type: EvScrape, Source: "sim/decode", Scrape: idle},
				{T: at, Type: EvScrape, Source: "sim/decode", Scrape: mid},
				{T: at, Type: EvRooms, Source: "sim/decode", Rooms: snap},
				{T: 2 * at, Type: EvScrape, Source: "sim/decode", Scrape: idle},
				{T: 2 * at, Type: EvRooms, Source: "sim/decode", Rooms: final},
			})
			r := checkSlotsReleased(v)
			if r.Status != tc.want {
				t.Fatalf("status %s, want %s: %s", r.Status, tc.want, r.Summary)
			}
			if tc.names != "" && !strings.Contains(r.Summary, tc.names) {
				t.Errorf("summary does not say %q: %s", tc.names, r.Summary)
			}
			if tc.live && r.Evidence["queue_instants_checked"] != 0 {
				t.Errorf("a live snapshot was judged")
			}
			if tc.want == Fail && !strings.Contains(r.Summary, "rooms ") {
				t.Errorf("summary names no room: %s", r.Summary)
			}
			if want := int64(2); !tc.live && r.Evidence["queue_instants_checked"] != want {
				t.Errorf("queue_instants_checked %d, want %d (the mid-run pair and the final one)", r.Evidence["queue_instants_checked"], want)
			}
		})
	}
}

// A room whose record lost events to the cap may be in any queue and is
// certainly in none; a record no request opened (a stray notice's) is in
// no queue.
func TestQueueRoomFacts(t *testing.T) {
	t.Parallel()
	capped := decodeRoom(1, contract.StateWaitingForInput)
	for len(capped.Events) < contract.MaxRoomEvents {
		capped.Events = append(capped.Events, contract.Event{Kind: "note"})
	}
	stray := contract.RoomRecord{Room: 2, Side: "decode", Ranks: map[int]string{0: contract.StateSuccess},
		Events: []contract.Event{{Kind: contract.RoomEventStatus, State: contract.StateSuccess, Detail: "notice: prefill Success"}}}
	for _, rule := range contract.QueueRules() {
		if !rule.May(contract.QueueRoomOf(capped)) || rule.Must(contract.QueueRoomOf(capped)) {
			t.Errorf("%v: a capped record must be possible and never certain", rule.Gauges)
		}
		if rule.May(contract.QueueRoomOf(stray)) {
			t.Errorf("%v: a record no request opened counts", rule.Gauges)
		}
	}
}
