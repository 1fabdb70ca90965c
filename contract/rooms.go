package contract

import (
	"strconv"
	"strings"
	"time"
)

// Room state names as /debug/rooms reports them: SGLang's KVPoll values, and
// StateCleared for a room no rank holds any more.
const (
	StateFailed          = "Failed"
	StateBootstrapping   = "Bootstrapping"
	StateWaitingForInput = "WaitingForInput"
	StateTransferring    = "Transferring"
	StateSuccess         = "Success"
	StateCleared         = "cleared"
)

// TerminalState reports whether a state name is Failed or Success.
func TerminalState(s string) bool { return s == StateFailed || s == StateSuccess }

// MaxRoomEvents is how many events the engine keeps per room record
// (clears are always kept beyond it): a record holding this many has
// perhaps lost some, so a checker must not read time spans from it.
const MaxRoomEvents = 64

// Event is one thing that happened to a room on one rank.
type Event struct {
	At     time.Time `json:"at"`
	Side   string    `json:"side"`
	Rank   int       `json:"rank"`
	Kind   string    `json:"kind"`
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
}

// RoomRecord is a room's current state and history as /debug/rooms shows it.
type RoomRecord struct {
	Room      uint64         `json:"room"`
	Side      string         `json:"side"`
	State     string         `json:"state"` // last status written (on any rank), or StateCleared
	Ranks     map[int]string `json:"ranks"` // per rank status while held
	Cleared   bool           `json:"cleared"`
	LastState string         `json:"last_state"` // status just before clear
	Events    []Event        `json:"events"`
	Created   time.Time      `json:"created"`
	Updated   time.Time      `json:"updated"`
}

// RoomsResponse is the body of PathDebugRooms.
type RoomsResponse struct {
	Role    string       `json:"role"`
	Held    []RoomRecord `json:"held"`
	Cleared []RoomRecord `json:"cleared"`
	// Queues are the queue gauges of QueueGaugesJudged per TP rank (index),
	// as /metrics would read them, taken under the same lock as Held so the
	// two describe one instant (the bundled engine; absent elsewhere).
	Queues []map[string]float64 `json:"queues,omitempty"`
}

// createdRid starts the rid part of the status event's detail that opens a
// room for a request ("sender created rid=RID"); CreatedFor writes it and
// CreatedRid reads it back, so a checker can tell which request a record
// was opened for where clients reuse a room.
const createdRid = "created rid="

// DuplicateRidRefusal is in the error a side of the bundled engine answers
// a request with when it still holds another request of the same rid
// (SGLang's tokenizer refuses a duplicate request id): what a checker
// looks for in a refused retry's message.
const DuplicateRidRefusal = "duplicate rid"

// CreatedFor is the detail's rid part for a room opened for rid.
func CreatedFor(rid string) string { return createdRid + rid }

// CreatedRid is the rid a status event's detail says the room was opened
// for, if it says so.
func CreatedRid(detail string) (string, bool) {
	_, rid, ok := strings.Cut(detail, createdRid)
	return rid, ok && rid != ""
}

// Room event kinds that record what a rank learned, written before the
// engine acts on it, so a checker can tell a failure the engine saw and
// ignored from one it never saw.
const (
	// RoomEventTransferError is prefill's transfer worker finding that a
	// KV chunk's write failed or that decode refused it.
	RoomEventTransferError = "transfer-error"
	// RoomEventAbortReceived is prefill taking decode's ABORT for the room.
	RoomEventAbortReceived = "abort-received"
	// RoomEventRequest is prefill's rank taking a request for a room a
	// TransferInfo had already opened: the room's status does not change,
	// so no status event names the request's rid (CreatedFor), and this
	// one does.
	RoomEventRequest = "request"
	// RoomEventAbortTombstone is a rank remembering a room it aborted (or
	// was told to abort before it held it), so a late message cannot
	// reopen it.
	RoomEventAbortTombstone = "abort-tombstone"
	// RoomEventAbortAck is prefill acknowledging decode's ABORT (on
	// decode: that acknowledgement arriving).
	RoomEventAbortAck = "abort-ack"
	// RoomEventKVReceived is decode's rank holding every chunk of the room
	// and the aux message after the last, written before it acknowledges
	// the aux: prefill's rank may write Success only after it. On NIXL the
	// rank's Success status follows at once; on Mooncake it waits for
	// prefill's Success status.
	RoomEventKVReceived = "kv-received"
	// RoomEventCommitted is decode taking the room's KV as complete and
	// moving the request to decoding.
	RoomEventCommitted = "committed"
	// RoomEventAbortRequest is a side taking the client's cancel (the
	// router's abort of its leg) for the room's request.
	RoomEventAbortRequest = "abort-request"
	// RoomEventStrayChunk is decode's rank taking a KV chunk for a room it
	// no longer holds in transfer (aborted, failed or done): decode refuses
	// it, and on RDMA it has already landed in the room's pages.
	RoomEventStrayChunk = "stray-chunk"
	// RoomEventAbortSent is decode sending prefill an ABORT for the room:
	// its pages then wait for every rank's ABORT_ACK.
	RoomEventAbortSent = "abort-sent"
	// The events a failure branch writes when it refuses or drops
	// something without changing the room's status, so /debug/rooms shows
	// why (each is a code probe's Records: CheckBranchesRecorded holds
	// them to the probes' hits).
	//
	// RoomEventLateWriteDropped: a transfer worker's status write for a
	// room already cleared, dropped.
	RoomEventLateWriteDropped = "late-write-dropped"
	// RoomEventStaleRegistration: a KV chunk addressed to an agent this
	// decode process never registered (a predecessor's), refused.
	RoomEventStaleRegistration = "stale-registration"
	// RoomEventLostPeerWrite: a KV write under a prefill name decode
	// retired (the prefill was declared lost), refused.
	RoomEventLostPeerWrite = "lost-peer-write"
	// RoomEventSuccessIgnored: a Mooncake Success status for a room decode
	// no longer transfers, ignored.
	RoomEventSuccessIgnored = "success-ignored"
	// RoomEventPagesHeld: a room failed by some prefill ranks' Failed
	// status keeps its pages until the other ranks' writes have drained
	// (their Failed status); it starts the ACK clock.
	RoomEventPagesHeld = "pages-held"
	// RoomEventPagesHeldUnfenced: a lost prefill's room keeps its pages
	// until the prefill acknowledges the ABORT, because the wire cannot
	// refuse its writes (Mooncake); it does not restart the ACK clock.
	RoomEventPagesHeldUnfenced = "pages-held-unfenced"
	// RoomEventPagesFreed: held pages freed because prefill's name was
	// retired, so no write of it can land.
	RoomEventPagesFreed = "pages-freed"
	// RoomEventMalformedKV: a KV message refused as malformed (cut
	// mid-frame, for another rank, not whole tokens).
	RoomEventMalformedKV = "malformed-kv"
	// RoomEventKVReplyFailed: a KV write's completion could not be sent
	// back to prefill.
	RoomEventKVReplyFailed = "kv-reply-failed"
	// RoomEventKVOverwritten: a late write landed in pages this room
	// owns (recorded on the owner).
	RoomEventKVOverwritten = "kv-overwritten"
	// RoomEventPagesNeeded is decode taking a request into its prealloc
	// queue: the detail (PagesNeeded) says how many KV pages a rank it
	// waits for, so a checker can tell a wait that can end from one for
	// more pages than the pool holds.
	RoomEventPagesNeeded = "pages-needed"
)

const pagesNeeded = " pages a rank"

// PagesNeeded is RoomEventPagesNeeded's detail for n pages a rank.
func PagesNeeded(n int) string { return strconv.Itoa(n) + pagesNeeded }

// ParsePagesNeeded reads a RoomEventPagesNeeded detail.
func ParsePagesNeeded(detail string) (int, bool) {
	num, ok := strings.CutSuffix(detail, pagesNeeded)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n >= 0
}

// Ending is a room event after which the fixed engine ends the room on
// that rank in the same step: its status becomes Failed (or stays
// Success, or the room is cleared). A rank still live well after one is
// a failure seen and not acted on, which some later deadline would
// otherwise end silently.
type Ending struct {
	// Role is the side that records the event; Kind is its event kind.
	Role, Kind string
	// Why says what the engine does on it, for violation messages.
	Why string
}

// Endings lists the room events that end a room at once.
func Endings() []Ending {
	return []Ending{
		{Role: SidePrefill, Kind: RoomEventTransferError, Why: "a failed KV write fails the room on its rank (SGLang's transfer worker sets KVPoll.Failed)"},
		{Role: SidePrefill, Kind: RoomEventAbortReceived, Why: "decode's ABORT fails the room on the rank that took it, unless it already succeeded"},
	}
}

// EndingOf returns the Ending an event of kind recorded on role is, if any.
func EndingOf(role, kind string) (Ending, bool) {
	for _, e := range Endings() {
		if e.Role == role && e.Kind == kind {
			return e, true
		}
	}
	return Ending{}, false
}
