package contract

import (
	"strings"
	"time"
)

// Backstop names: the fixed engine's deadlines, each the last resort that
// ends a room when the message that should have ended it never came.
const (
	BackstopBootstrap = "bootstrap-timeout"
	BackstopInflight  = "inflight-timeout"
	BackstopWaiting   = "waiting-timeout"
	BackstopAck       = "ack-timeout"
	// BackstopAbortResend is decode resending an ABORT prefill did not
	// acknowledge within the ACK timeout: a recovery, so on the fixed
	// engine it too must have a fault, load or a race behind it.
	BackstopAbortResend = "abort-resent"
)

// Room event kinds the checkers read: a status write (State is the new
// status), a rank clearing the room, and decode sending its metadata (the
// start of its waiting deadline).
const (
	RoomEventStatus       = "status"
	RoomEventClear        = "clear"
	RoomEventMetadataSent = "metadata-sent"
	// RoomEventMetadata is prefill taking decode's TransferInfo (it then
	// knows where to send the room's statuses); RoomEventFailNotice is
	// prefill sending decode the Failed status of a room it ended.
	RoomEventMetadata   = "metadata"
	RoomEventFailNotice = "fail-notice"
	// RoomEventFailNoticeDeferred is prefill holding that Failed status
	// back until its transfer worker's write of the room drains (a
	// RoomEventFailNotice follows when it is sent): decode may not free
	// the pages that write lands in before it.
	RoomEventFailNoticeDeferred = "fail-notice-deferred"
	// RoomEventForwarded is prefill running the request's forward and
	// queuing its KV chunks: the start of its inflight deadline.
	RoomEventForwarded = "forwarded"
	// RoomEventSuccessNotice is prefill's Success status sent to decode
	// over the control plane, on a dialect that carries it there (Mooncake).
	RoomEventSuccessNotice = "success-notice"
)

// Backstop is one deadline of the fixed engine: where it runs, what it
// guards, what sets it and the room event it writes when it fires. The
// engine writes its events from this table and timeouts-explained reads
// them back, so the two cannot drift apart.
type Backstop struct {
	// Name is the backstop's name (BackstopBootstrap, ...).
	Name string
	// Role is the side whose loop enforces it (SidePrefill, SideDecode).
	Role string
	// States are the room states it fires in on Role. The ACK deadline
	// guards pages of a room already Failed and cleared.
	States []string
	// Config is the EngineConfig field that sets it, by its YAML key.
	Config string
	// Probe is the code probe its branch hits.
	Probe ProbeID
	// Kind and Detail are the room event the engine writes when it fires:
	// for a status event (Kind RoomEventStatus) the new state is Failed
	// and the detail is "<writer>: " followed by Detail; any other kind is
	// a note of its own whose detail is Detail.
	Kind   string
	Detail string
	// Clock says what starts the deadline's clock, for people.
	Clock string
	// ClockStart is the room event on Role's side that starts the clock,
	// as the engine writes it in the same step: the backstop must not fire
	// sooner than its deadline after the last such event (StartsClock).
	// "" when no one event marks it (the ACK clock restarts on an abort,
	// a resend or pages held for other ranks' writes), so firing too early
	// is not judged.
	ClockStart string
	// ClockRestarts, for a backstop without a ClockStart, lists the room
	// events on Role's side that (re)start its clock: every place that
	// restarts it writes one, and none is written where it does not. It
	// must fire no sooner than RestartDeadline after the latest one before
	// it, and no later than that plus a margin: a deadline enforced late
	// holds the room, and its pages, longer than configured.
	ClockRestarts []string
	// PeerNotice is the room event kind on the peer's side that carries
	// what this backstop waits for ("" when the peer's room ending is that
	// notice): when the peer recorded it well before the backstop fired,
	// the notice was lost, and the peer still holding the room is no
	// excuse.
	PeerNotice string
	// Unexcused lists fault targets (a link or a role, as a fault names
	// it first) whose faults cannot hold back what the backstop waits for,
	// so a fault there active during the room's life does not explain it
	// firing.
	Unexcused []string
}

// Backstops lists the fixed engine's deadlines.
func Backstops() []Backstop {
	return []Backstop{
		{Name: BackstopBootstrap, Role: SidePrefill, States: []string{StateBootstrapping}, Config: "bootstrap_timeout",
			Probe: ProbePrefillBootstrapTimeout, Kind: RoomEventStatus, Detail: "bootstrap timeout",
			Clock: "prefill's request joins the bootstrap queue (its sender is created)", PeerNotice: RoomEventMetadataSent,
			ClockStart: RoomEventRequest,
			// The client's request, or the router's to prefill, coming
			// late starts this clock late; it does not delay decode's
			// TransferInfo, which the router's other leg brings about.
			Unexcused: []string{LinkClientRouter, LinkRouterPrefill}},
		{Name: BackstopInflight, Role: SidePrefill, States: []string{StateWaitingForInput, StateTransferring}, Config: "inflight_timeout",
			Probe: ProbePrefillInflightTimeout, Kind: RoomEventStatus, Detail: "inflight timeout",
			Clock: "prefill forwards the request and queues its KV chunks", ClockStart: RoomEventForwarded},
		{Name: BackstopWaiting, Role: SideDecode, States: []string{StateBootstrapping, StateWaitingForInput, StateTransferring}, Config: "waiting_timeout",
			Probe: ProbeDecodeWaitingTimeout, Kind: RoomEventStatus, Detail: "waiting timeout",
			Clock: "decode sends its metadata (pages allocated)", ClockStart: RoomEventMetadataSent},
		{Name: BackstopAbortResend, Role: SideDecode, States: []string{StateFailed}, Config: "ack_timeout",
			Probe: ProbeDecodeAbortResent, Kind: "abort-resent", Detail: "no ABORT_ACK within the ACK timeout: the ABORT is resent",
			Clock: "decode aborts a room whose KV transfer was under way, keeping its pages (again at each resend)", PeerNotice: "abort-ack",
			ClockRestarts: ackClock()},
		{Name: BackstopAck, Role: SideDecode, States: []string{StateFailed}, Config: "ack_timeout",
			Probe: ProbeDecodeAckTimeoutFree, Kind: BackstopAck, Detail: "freeing pages without prefill's ACK after every resend; retiring prefill's name",
			Clock: "decode aborts a room whose KV transfer was under way, keeping its pages", PeerNotice: "abort-ack",
			ClockRestarts: ackClock()},
	}
}

// ackClock lists the decode events that (re)start the ACK clock: the ABORT
// sent for a room in transfer, each resend, and pages held for prefill
// ranks still writing (whose Failed status the clock then waits for).
// A lost prefill's rooms held on a wire that cannot refuse its writes
// write RoomEventPagesHeldUnfenced instead, which restarts nothing.
func ackClock() []string {
	return []string{RoomEventAbortSent, BackstopAbortResend, RoomEventPagesHeld}
}

// AbortResends is how many times decode resends an ABORT that prefill has
// not acknowledged within the ACK timeout before it gives up on the ACK
// (engine/core's AbortResends is this value).
const AbortResends = 2

// LookupBackstop returns the named backstop of Backstops; the zero
// Backstop when there is none.
func LookupBackstop(name string) Backstop {
	for _, b := range Backstops() {
		if b.Name == name {
			return b
		}
	}
	return Backstop{}
}

// Deadline is the backstop's deadline under c (resolved: zero fields are
// not defaulted here).
// RestartDeadline is how long after the latest event of ClockRestarts the
// backstop fires: one ACK timeout for the ACK clock, which each resend
// restarts (Deadline is the whole run of resends); Deadline otherwise.
func (b Backstop) RestartDeadline(c EngineConfig) time.Duration {
	if b.Config == "ack_timeout" {
		return c.AckTimeout
	}
	return b.Deadline(c)
}

func (b Backstop) Deadline(c EngineConfig) time.Duration {
	switch b.Config {
	case "bootstrap_timeout":
		return c.BootstrapTimeout
	case "inflight_timeout":
		return c.InflightTimeout
	case "waiting_timeout":
		return c.WaitingTimeout
	case "ack_timeout":
		// decode resends an unanswered ABORT AbortResends times, one ACK
		// timeout apart, before it frees the pages without the ACK
		return time.Duration(AbortResends+1) * c.AckTimeout
	}
	return 0
}

// StartsClock reports whether e (on b.Role's side) starts b's clock. A
// prefill request's arrival is its status event that opens the room for
// the request ("sender created rid=…"), or the RoomEventRequest note with
// the same detail when decode's TransferInfo opened the room first.
func (b Backstop) StartsClock(e Event) bool {
	if b.ClockStart == "" || e.Side != b.Role {
		return false
	}
	if b.ClockStart == RoomEventRequest {
		_, created := CreatedRid(e.Detail)
		return created && (e.Kind == RoomEventStatus || e.Kind == RoomEventRequest)
	}
	return e.Kind == b.ClockStart
}

// FiredBy reports whether e is the event the backstop writes when it fires.
func (b Backstop) FiredBy(e Event) bool {
	if e.Side != b.Role || e.Kind != b.Kind {
		return false
	}
	if b.Kind == RoomEventStatus {
		_, why, ok := strings.Cut(e.Detail, ": ")
		return ok && e.State == StateFailed && why == b.Detail
	}
	// An event kind of its own names the backstop whatever its detail says,
	// so runs recorded before a detail was reworded still read.
	return true
}

// StateDeadline bounds a room's time in one state on one role by the sum
// of the named backstops' deadlines: the fixed engine cannot keep a room
// there longer (plus StateMargin), because one of them fires first.
type StateDeadline struct {
	// Role and State are where the bound holds.
	Role, State string
	// Backstops are the deadlines whose sum is the bound.
	Backstops []string
	// From is the room event that starts the clock; "" is the room
	// entering State. A room without the event is not bounded there
	// (decode's wait for pages, before its metadata, has no deadline).
	From string
}

// StateDeadlines lists every bounded room state. Prefill's WaitingForInput
// is bounded by the bootstrap and the inflight deadlines together:
// decode's metadata may reach it before its request does (which the
// orphan sweep bounds by the bootstrap timeout), and from the forward the
// inflight deadline runs.
func StateDeadlines() []StateDeadline {
	return []StateDeadline{
		{Role: SidePrefill, State: StateBootstrapping, Backstops: []string{BackstopBootstrap}},
		{Role: SidePrefill, State: StateWaitingForInput, Backstops: []string{BackstopBootstrap, BackstopInflight}},
		{Role: SidePrefill, State: StateTransferring, Backstops: []string{BackstopInflight}},
		{Role: SideDecode, State: StateWaitingForInput, Backstops: []string{BackstopWaiting}, From: RoomEventMetadataSent},
		{Role: SideDecode, State: StateTransferring, Backstops: []string{BackstopWaiting}, From: RoomEventMetadataSent},
	}
}

// Bound is the state's deadline under c (resolved).
func (s StateDeadline) Bound(c EngineConfig) time.Duration {
	var d time.Duration
	for _, n := range s.Backstops {
		d += LookupBackstop(n).Deadline(c)
	}
	return d
}

// StateMargin is what a room's time in a state may exceed its bound by on
// the fixed engine: a deadline is enforced by a loop that looks every
// CheckInterval, and under load one iteration (a forward, a burst of
// notices) may take a while, so 2s plus two check intervals.
func StateMargin(c EngineConfig) time.Duration { return 2*time.Second + 2*c.CheckInterval }

// DefaultMaxPrefillTokens is SGLang's --max-prefill-tokens default: the
// prompt tokens one prefill forward pass takes (the first request of a
// batch whatever its length). A deadline prefill's scheduler enforces
// between passes can fire up to one pass late.
const DefaultMaxPrefillTokens = 16384

// FailureMemory is how long prefill remembers a room it ended before
// decode's TransferInfo could tell it where decode is (an abort from
// decode, prefill's own failure): a TransferInfo arriving within it is
// ignored (decode aborted) or answered Failed at once (prefill failed);
// after it, decode is left to its own waiting deadline. Four bootstrap
// deadlines: decode sends its TransferInfo once it has pages, which a
// full KV pool can delay well past one.
func FailureMemory(c EngineConfig) time.Duration { return 4 * c.BootstrapTimeout }

// HeartbeatFailures is SGLang's HEARTBEAT_MAX_FAILURE: the consecutive
// missed heartbeats after which decode declares a prefill lost and fails
// every room paired with it at once.
const HeartbeatFailures = 2

// PeerLostDetail starts the reason of the Failed status decode writes for
// each room paired with a prefill it declared lost (after "<writer>: "),
// followed by that prefill's bootstrap address.
const PeerLostDetail = "lost connection with prefill "

// RouteLookupTimeout bounds decode's HTTP requests to a prefill's
// bootstrap server for its routes: a stopped prefill holds the request
// until it continues or this runs out (then the request fails with 502).
const RouteLookupTimeout = 3 * time.Second

// PeerLossDetection bounds how long after a prefill stops answering decode
// declares it lost: a heartbeat every HeartbeatInterval, each waiting up
// to one interval for its answer, HeartbeatFailures misses in a row (the
// first tick comes up to one interval after the stop).
func PeerLossDetection(c EngineConfig) time.Duration {
	return (HeartbeatFailures + 1) * c.HeartbeatInterval
}
