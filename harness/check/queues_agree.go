package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

// queuesAgree judges every queue gauge against the rooms its engine held at
// the same instant (contract.QueueRules): a reading below the rooms that
// must be in the queue, or above those that may be, is a gauge that reads
// another queue, a request lost from its queue while its room is held, or
// one left queued after its room ended. Only rooms snapshots that carry
// the queue gauges read at their own instant are judged (RoomsSnap.Queues:
// the simulator's, and the bundled engine's /debug/rooms, which reads them
// under the lock it reads its rooms under); SGLang exports no room
// records, so its logs are judged by the baseline rules alone.
func queuesAgree(v *View, ev map[string]int64) []string {
	var bad []string
	srcs := make([]string, 0, len(v.Rooms)+len(v.Final))
	for src := range v.Rooms {
		srcs = append(srcs, src)
	}
	for src := range v.Final {
		if _, ok := v.Rooms[src]; !ok {
			srcs = append(srcs, src)
		}
	}
	slices.Sort(srcs)
	for _, src := range srcs {
		snaps := append([]RoomsSnap(nil), v.Rooms[src]...)
		if f, ok := v.Final[src]; ok {
			snaps = append(snaps, f)
		}
		for _, snap := range snaps {
			if snap.Err != "" || snap.Role == "" || snap.Queues == nil {
				continue
			}
			ev["queue_instants_checked"]++
			bad = append(bad, judgeQueues(snap, ev)...)
			if len(bad) >= maxQueueFindings {
				return bad[:maxQueueFindings]
			}
		}
	}
	return bad
}

// maxQueueFindings bounds the findings: one wrong gauge reads wrong at
// most instants of a run.
const maxQueueFindings = 20

func judgeQueues(snap RoomsSnap, ev map[string]int64) []string {
	facts := make([]contract.QueueRoom, len(snap.Held))
	for i, r := range snap.Held {
		f, ok := snap.QueueFacts[r.Room]
		switch {
		case ok:
		case len(r.Events) > 0:
			f = contract.QueueRoomOf(r)
		default:
			f = contract.QueueRoom{Unknown: true} // held since the reading: in any queue, certainly in none
		}
		facts[i] = f
	}
	var bad []string
	explained := map[string]bool{}
	for _, rule := range contract.QueueRules() {
		if rule.Side != snap.Role {
			continue
		}
		for _, key := range rankKeys(snap.Queues, rule.Gauges) {
			rank, perRank := -1, rule.PerRank
			if perRank {
				var ok bool
				if rank, ok = tpRank(key); !ok {
					continue
				}
			}
			got := 0.0
			for _, g := range rule.Gauges {
				got += snap.Queues[g][key]
			}
			var must, may []uint64
			for i, r := range snap.Held {
				if perRank {
					if _, on := r.Ranks[rank]; !on {
						continue
					}
				}
				if rule.Must(facts[i]) {
					must = append(must, r.Room)
				}
				if rule.May(facts[i]) {
					may = append(may, r.Room)
				}
			}
			ev["queue_readings_checked"]++
			name := strings.Join(rule.Gauges, "+")
			where := name
			if key != "" {
				where += "{" + key + "}"
			}
			// The rule's reason once per run's findings, not on each.
			why := ""
			if !explained[name] {
				why, explained[name] = " ("+rule.Why+")", true
			}
			switch {
			case got < float64(len(must)):
				ev["queue_readings_wrong"]++
				bad = append(bad, fmt.Sprintf("%s at %v: %s reads %g, but %d held rooms must be in it%s: %s", snap.Role, snap.At, where, got,
					len(must), why, roomList(must)))
			case got > float64(len(may)):
				ev["queue_readings_wrong"]++
				bad = append(bad, fmt.Sprintf("%s at %v: %s reads %g, but only %d held rooms may be in it%s: %s", snap.Role, snap.At, where, got,
					len(may), why, roomList(may)))
			}
		}
	}
	return bad
}

// rankKeys are the rank series queues has for every one of gauges.
func rankKeys(queues map[string]map[string]float64, gauges []string) []string {
	var keys []string
	for k := range queues[gauges[0]] {
		all := true
		for _, g := range gauges[1:] {
			if _, ok := queues[g][k]; !ok {
				all = false
			}
		}
		if all {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// tpRank reads the tp_rank of a RankKey with no other rank label (the
// bundled engine's series).
func tpRank(key string) (int, bool) {
	v, ok := strings.CutPrefix(key, contract.LabelTPRank+"=")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func roomList(rooms []uint64) string {
	if len(rooms) == 0 {
		return "none"
	}
	parts := make([]string, 0, min(len(rooms), 6))
	for _, r := range rooms[:min(len(rooms), 6)] {
		parts = append(parts, strconv.FormatUint(r, 10))
	}
	s := "rooms " + strings.Join(parts, ", ")
	if len(rooms) > 6 {
		s += fmt.Sprintf(" and %d more", len(rooms)-6)
	}
	return s
}

// SetQueues records the queue gauges read with held, per TP rank, and the
// facts each held record's events give, so the snapshot can be judged by
// queuesAgree once the events are dropped.
func (s *RoomsSnap) SetQueues(held []contract.RoomRecord, perRank []map[string]float64) {
	s.Queues = map[string]map[string]float64{}
	for rank, gauges := range perRank {
		key := RankKey(map[string]string{contract.LabelTPRank: strconv.Itoa(rank)})
		for _, g := range contract.QueueGaugesJudged() {
			if v, ok := gauges[g]; ok {
				if s.Queues[g] == nil {
					s.Queues[g] = map[string]float64{}
				}
				s.Queues[g][key] = v
			}
		}
	}
	s.QueueFacts = make(map[uint64]contract.QueueRoom, len(held))
	for _, r := range held {
		s.QueueFacts[r.Room] = contract.QueueRoomOf(r)
	}
}
