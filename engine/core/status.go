package core

import (
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// KVPoll is a room's transfer status, with SGLang's values. The order matters:
// merges take the max and rank consensus takes the min.
type KVPoll int8

// Room statuses.
const (
	Failed          KVPoll = 0
	Bootstrapping   KVPoll = 1
	WaitingForInput KVPoll = 2
	Transferring    KVPoll = 3
	Success         KVPoll = 4
)

func (p KVPoll) String() string {
	switch p {
	case Failed:
		return contract.StateFailed
	case Bootstrapping:
		return contract.StateBootstrapping
	case WaitingForInput:
		return contract.StateWaitingForInput
	case Transferring:
		return contract.StateTransferring
	case Success:
		return contract.StateSuccess
	}
	return "Unknown"
}

// Terminal reports whether p is Failed or Success.
func (p KVPoll) Terminal() bool { return p == Failed || p == Success }

// Writer names who writes a status, because the fixed engine treats late
// writers differently from the room's creators.
type Writer string

// Status writers.
const (
	WriterSender    Writer = "sender"    // prefill scheduler creating the sender
	WriterBootstrap Writer = "bootstrap" // prefill bootstrap loop (metadata, ABORT)
	WriterWorker    Writer = "worker"    // prefill transfer worker
	WriterScheduler Writer = "scheduler" // local abort, deadlines
	WriterReceiver  Writer = "receiver"  // decode receiver
)

// StatusTable is one rank's room→status dict with SGLang's merge rules and
// the fixed engine's: Failed is sticky until clear, an absent room is dead,
// an ABORT for an absent room leaves a tombstone, and late writers never
// re-insert a cleared room. Each regression removes exactly one of these.
type StatusTable struct {
	reg        contract.Regressions
	status     map[uint64]KVPoll
	tombstones map[uint64]time.Time
	hist       *History
	side       string
	rank       int
	probes     *ProbeCounts
	// expiredAt and ttl are the last ExpireTombstones (tables.go).
	expiredAt time.Time
	ttl       time.Duration
	// changes counts every change to status (an entry set, changed or
	// removed), so a scheduler can tell that no room's status moved
	// since it last looked at them all; with logChanges on, moved lists
	// the rooms changed, in order, until the scheduler takes them.
	changes    uint64
	logChanges bool
	moved      []uint64
}

// changed counts a change to room's status.
func (t *StatusTable) changed(room uint64) {
	t.changes++
	if t.logChanges {
		t.moved = append(t.moved, room)
	}
}

// hit counts a status-table probe: onPrefill when the table is prefill's,
// onDecode when it is decode's.
func (t *StatusTable) hit(onPrefill, onDecode contract.ProbeID) {
	if t.side == contract.SidePrefill {
		t.probes.Hit(onPrefill)
	} else {
		t.probes.Hit(onDecode)
	}
}

// NewStatusTable returns an empty table recording into hist.
func NewStatusTable(side string, rank int, reg contract.Regressions, hist *History) *StatusTable {
	return &StatusTable{reg: reg, status: map[uint64]KVPoll{}, tombstones: map[uint64]time.Time{}, hist: hist, side: side, rank: rank}
}

// Update merges s into room's status.
func (t *StatusTable) Update(now time.Time, room uint64, s KVPoll, w Writer, why string) {
	cur, ok := t.status[room]
	if !ok {
		switch {
		case s == Failed:
			// Upstream (#24539) drops a Failed write for an absent room. The
			// fixed engine also remembers it, so a sender or metadata that
			// arrives later sees the abort (abort-before-status).
			if !t.reg.On(contract.AbortBeforeStatus) {
				t.hit(contract.ProbePrefillStatusTombstone, contract.ProbeDecodeStatusUnexpected)
				t.tombstones[room] = now
				t.hist.Add(now, room, t.side, t.rank, contract.RoomEventAbortTombstone, Failed, string(w)+": "+why)
				return
			}
			t.hit(contract.ProbePrefillAbortDropped, contract.ProbeDecodeStatusUnexpected)
			t.hist.Add(now, room, t.side, t.rank, "abort-dropped", Failed, string(w)+": "+why+" (room absent)")
			return
		case w == WriterWorker && !t.reg.On(contract.StatusResurrection):
			// A transfer worker finishing after the room was cleared must not
			// bring it back.
			t.hit(contract.ProbePrefillLateWriteDropped, contract.ProbeDecodeStatusUnexpected)
			t.hist.Add(now, room, t.side, t.rank, contract.RoomEventLateWriteDropped, s, string(w)+": "+why)
			return
		case t.isTombstoned(room):
			t.hit(contract.ProbePrefillCreatedAfterAbort, contract.ProbeDecodeStatusUnexpected)
			t.status[room] = Failed
			t.changed(room)
			t.hist.Add(now, room, t.side, t.rank, "status", Failed, string(w)+": "+why+" (aborted earlier)")
			return
		}
		if w == WriterWorker {
			// Only with status-resurrection: a late worker write re-inserts
			// a cleared room.
			t.hit(contract.ProbePrefillLateWriteReinserts, contract.ProbeDecodeStatusUnexpected)
		}
		t.status[room] = s
		t.changed(room)
		t.hist.Add(now, room, t.side, t.rank, "status", s, string(w)+": "+why)
		return
	}
	next := cur
	switch {
	case cur == Failed && !t.nonSticky(w):
		// Sticky until clear: nothing revives a failed room.
		t.hit(contract.ProbePrefillFailedSticky, contract.ProbeDecodeFailedSticky)
		return
	case s == Failed:
		next = Failed
	case cur == Failed:
		// Only with a regression on: a non-sticky writer revives the room.
		t.hit(contract.ProbePrefillFailedRevived, contract.ProbeDecodeStatusUnexpected)
		next = max(cur, s)
	default:
		next = max(cur, s)
	}
	if next != cur {
		t.status[room] = next
		t.changed(room)
		t.hist.Add(now, room, t.side, t.rank, "status", next, string(w)+": "+why)
	}
}

func (t *StatusTable) nonSticky(w Writer) bool {
	if t.reg.On(contract.StatusResurrection) {
		return true
	}
	// The sender constructor max-merged over Failed (abort-before-status, SGLang #34692).
	return w == WriterSender && t.reg.On(contract.AbortBeforeStatus)
}

func (t *StatusTable) isTombstoned(room uint64) bool {
	_, ok := t.tombstones[room]
	return ok
}

// tombstonedAt is when room's tombstone was laid, if it has one.
func (t *StatusTable) tombstonedAt(room uint64) (time.Time, bool) {
	at, ok := t.tombstones[room]
	return at, ok
}

// Check returns room's status. An absent room is Failed: nothing will ever
// move it. With unknown-room-waiting it reads WaitingForInput, as NIXL's
// check_status did.
func (t *StatusTable) Check(room uint64) KVPoll {
	if s, ok := t.status[room]; ok {
		return s
	}
	if t.reg.On(contract.UnknownRoomWaiting) {
		t.hit(contract.ProbePrefillUnknownRoomWaiting, contract.ProbeDecodeStatusUnexpected)
		return WaitingForInput
	}
	return Failed
}

// Has reports whether the room is present.
func (t *StatusTable) Has(room uint64) bool {
	_, ok := t.status[room]
	return ok
}

// Clear removes a room.
func (t *StatusTable) Clear(now time.Time, room uint64, why string) {
	if s, ok := t.status[room]; ok {
		delete(t.status, room)
		t.changed(room)
		t.hist.Clear(now, room, t.side, t.rank, s, why)
	}
}

// Drop removes a room from the dict while something still polls it
// (unknown-room-waiting): the history keeps the room held in the state an
// absent room reads, WaitingForInput, instead of recording a clear.
func (t *StatusTable) Drop(now time.Time, room uint64, why string) {
	if s, ok := t.status[room]; ok {
		delete(t.status, room)
		t.changed(room)
		reads := Failed
		if t.reg.On(contract.UnknownRoomWaiting) {
			reads = WaitingForInput
		}
		t.hist.Add(now, room, t.side, t.rank, "status", reads, why+" (was "+s.String()+")")
	}
}

// Tombstone records that room was aborted, so later creators see Failed.
func (t *StatusTable) Tombstone(now time.Time, room uint64) {
	if !t.reg.On(contract.AbortBeforeStatus) {
		t.tombstones[room] = now
	}
}

// Rooms returns the present rooms and their statuses.
func (t *StatusTable) Rooms() map[uint64]KVPoll { return t.status }

// ExpireTombstones forgets aborts older than ttl.
func (t *StatusTable) ExpireTombstones(now time.Time, ttl time.Duration) {
	t.noteExpiry(now, ttl)
	for r, at := range t.tombstones {
		if now.Sub(at) > ttl {
			t.hit(contract.ProbePrefillTombstoneExpired, contract.ProbeDecodeStatusUnexpected)
			delete(t.tombstones, r)
			if _, held := t.status[r]; !held {
				t.hist.Forget(r)
			}
		}
	}
}
