package contract

import (
	_ "embed"
	"strings"
)

// ProbeID indexes a code probe: a named failure-handling branch of the
// bundled engine (an abort, a failure, a timeout or backstop, a late,
// duplicate or unknown message, a peer loss, a restart or a release). The
// engine counts hits in an array indexed by ProbeID, so a hit is one atomic
// add with no lookup; the names and docs live here, where the CLI and the
// harness read them without importing the engine. FoundationDB's TEST()
// code probes are the model: a probe no gate scenario hits fails the gate.
type ProbeID uint16

// Probe IDs, in table order (Probes). Prefill's first, then decode's, then
// the router's.
const (
	ProbePrefillAbortKillsLoop ProbeID = iota
	ProbePrefillMalformedKillsLoop
	ProbePrefillMalformedControl
	ProbePrefillRegistrationDuplicate
	ProbePrefillDecodeRestarted
	ProbePrefillMetadataAfterAbort
	ProbePrefillMetadataAfterFailure
	ProbePrefillRequestAfterFailNotice
	ProbePrefillMetadataFromPredecessor
	ProbePrefillMetadataUnknownAgent
	ProbePrefillMetadataDuplicate
	ProbePrefillMetadataBeforeRequest
	ProbePrefillAbortHeldRoom
	ProbePrefillAbortUnknownRoom
	ProbePrefillAbortDuplicate
	ProbePrefillAbortAfterSuccess
	ProbePrefillAbortOrphanCleared
	ProbePrefillAbortAckDeferred
	ProbePrefillLocalAbort
	ProbePrefillLocalAbortUnknown
	ProbePrefillAddDuplicateRid
	ProbePrefillAddRoomInUse
	ProbePrefillStatusTombstone
	ProbePrefillAbortDropped
	ProbePrefillLateWriteDropped
	ProbePrefillLateWriteReinserts
	ProbePrefillCreatedAfterAbort
	ProbePrefillFailedSticky
	ProbePrefillFailedRevived
	ProbePrefillUnknownRoomWaiting
	ProbePrefillTombstoneExpired
	ProbePrefillBootstrapTimeout
	ProbePrefillBootstrapFailed
	ProbePrefillFailedBeforeForward
	ProbePrefillInflightTimeout
	ProbePrefillTransferFailed
	ProbePrefillFailNotice
	ProbePrefillFailNoticeDeferred
	ProbePrefillOrphanInfoSwept
	ProbePrefillOrphanStatusSwept
	ProbePrefillNoTransferInfo
	ProbePrefillWorkerSkipDead
	ProbePrefillWorkerSendAborted
	ProbePrefillTransferError
	ProbePrefillTransferErrorClears
	ProbePrefillAckAfterDrain
	ProbePrefillFailNoticeAfterDrain
	ProbePrefillKVDialFailed
	ProbePrefillKVWriteFailed
	ProbePrefillKVReadFailed
	ProbePrefillChunkRefused
	ProbePrefillClientGone
	ProbePrefillAbortEndpoint
	ProbePrefillRouteUnknownRank
	ProbePrefillNoticeQueueFull
	ProbePrefillNoticeConnectFailed
	ProbePrefillNoticeSendFailed

	ProbeDecodeAddDuplicateRid
	ProbeDecodeAddRoomInUse
	ProbeDecodeAddRoomReleasedRecently
	ProbeDecodeAddTooLong
	ProbeDecodeAbort
	ProbeDecodeAbortUnknown
	ProbeDecodeAbortFlipOnly
	ProbeDecodeAbortRank0Early
	ProbeDecodeRanksDesynced
	ProbeDecodeAbortAfterFinish
	ProbeDecodeKVChanged
	ProbeDecodeAckTimeoutFree
	ProbeDecodeAbortResent
	ProbeDecodePreallocSkipFlipped
	ProbeDecodePreallocWaitPages
	ProbeDecodePreallocFailed
	ProbeDecodeWaitingTimeout
	ProbeDecodeTransferFailed
	ProbeDecodeAbortInPrealloc
	ProbeDecodeAbortInTransfer
	ProbeDecodeAbortWhileRunning
	ProbeDecodeFreeBeforeAck
	ProbeDecodeChunkUnknownRoom
	ProbeDecodeChunkWrongStage
	ProbeDecodeForeignWrite
	ProbeDecodeChunkOverrun
	ProbeDecodeChunkPartialToken
	ProbeDecodeChunkStaleAgent
	ProbeDecodeChunkLostPeer
	ProbeDecodeAuxInactive
	ProbeDecodeMalformedNotice
	ProbeDecodeAckFreesPages
	ProbeDecodeAckUnknownRoom
	ProbeDecodeAckDuplicate
	ProbeDecodeFailNotice
	ProbeDecodeFailNoticeUnknownRoom
	ProbeDecodeFailNoticeIgnored
	ProbeDecodeFailedRanksWriting
	ProbeDecodeFailNoticeDrained
	ProbeDecodeStatusNotFailed
	ProbeDecodeSuccessNoticeInactive
	ProbeDecodePrefillLostRoom
	ProbeDecodePrefillLostPrealloc
	ProbeDecodeRetiredPeerFreesPages
	ProbeDecodeUnfencedPagesHeld
	ProbeDecodeUnfencedAckResent
	ProbeDecodeFailedSticky
	ProbeDecodeStatusUnexpected
	ProbeDecodeHeartbeatMiss
	ProbeDecodePrefillLost
	ProbeDecodeRouteFailed
	ProbeDecodeClientGone
	ProbeDecodeAbortEndpoint
	ProbeDecodeKVReadError
	ProbeDecodeKVWrongRank
	ProbeDecodeKVReplyFailed
	ProbeDecodeControlNoRoute
	ProbeDecodeControlQueueFull
	ProbeDecodeControlConnectFailed
	ProbeDecodeControlSendFailed

	ProbeRouterPrefillFailed
	ProbeRouterClientLeftEarly
	ProbeRouterClientLeftMidAnswer
	ProbeRouterDecodeFailed
	ProbeRouterDecodeErrorStatus
	ProbeRouterDecodeRefused
	ProbeRouterPrefillRefused
	ProbeRouterUpstreamError
	ProbeRouterStreamEndedEarly
	ProbeRouterBadEvent

	probeCount
)

// NumProbes is the number of probes: the length of an engine's counter
// array.
const NumProbes = int(probeCount)

// Probe sides: the role whose code holds the branch.
const (
	SidePrefill = "prefill"
	SideDecode  = "decode"
	SideRouter  = "router"
)

// Probe documents one code probe.
type Probe struct {
	// ID indexes the engine's counters.
	ID ProbeID `json:"-"`
	// Name is side/kebab-case, unique; metrics and reports use it.
	Name string `json:"name"`
	// Side is the role whose code holds the branch.
	Side string `json:"side"`
	// Doc says in one line what the branch handles.
	Doc string `json:"doc"`
	// Regression, when set, names the known regression only with which the
	// branch exists (the fixed engine never takes it).
	Regression string `json:"regression,omitempty"`
	// Never marks a defensive branch the fixed engine must never take,
	// whatever the faults: only a regression's broken neighbour, or a bug,
	// gets there. Such a probe is an assertion, not a path to reach: a run
	// with no regression on that hits it fails CheckUnreachableBranches,
	// and the gate does not ask any scenario to hit it.
	Never bool `json:"never,omitempty"`
	// Records, when set, is the room event kind (contract.RoomEvent*) the
	// branch writes to the room's history on every hit, whether or not the
	// history keeps it (a room it never knew): so a branch that refuses or
	// drops something is never silent in /debug/rooms. Each kind here is
	// written by these probes' branches only, so a role's events of the
	// kind equal the hits of its probes that record it
	// (CheckBranchesRecorded).
	Records string `json:"records,omitempty"`
	// Sites are the probe's places in the engine source, "path:line" from
	// the repository root (probe_sites.txt, which a test keeps true).
	Sites []string `json:"sites"`
}

// probeSites is "name path:line" per call site, maintained by
// TestProbeSites (PDCHAOS_UPDATE_PROBES=1 go test ./contract/ -run
// TestProbeSites rewrites it from the engine source).
//
//go:embed probe_sites.txt
var probeSites string

// Probes returns the probe table in ProbeID order, each with its sites.
func Probes() []Probe {
	t := probeTable()
	sites := ProbeSites()
	for i := range t {
		t[i].Sites = sites[t[i].Name]
	}
	return t
}

// ProbeSites parses the embedded site list: probe name → "path:line"s.
func ProbeSites() map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(probeSites, "\n") {
		name, site, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && !strings.HasPrefix(name, "#") {
			out[name] = append(out[name], site)
		}
	}
	return out
}

// ProbesOf returns the probes of one side, in table order.
func ProbesOf(side string) []Probe {
	var out []Probe
	for _, p := range Probes() {
		if p.Side == side {
			out = append(out, p)
		}
	}
	return out
}

// UnexpectedProbe is a probe hit on a run that should never reach its
// branch: a Never probe with no regression on, or a regression's own
// branch with that regression off.
type UnexpectedProbe struct {
	Probe Probe
	Hits  int64
}

// UnexpectedProbes returns the probes of hits (name → count) that a run
// with regressions on must not have hit, in table order. Unknown names
// are ignored: a target built from other sources may report more.
func UnexpectedProbes(hits map[string]int64, regressions []string) []UnexpectedProbe {
	on := map[string]bool{}
	for _, r := range regressions {
		on[r] = true
	}
	var out []UnexpectedProbe
	for _, p := range Probes() {
		n := hits[p.Name]
		if n <= 0 {
			continue
		}
		if (p.Never && len(on) == 0) || (p.Regression != "" && !on[p.Regression]) {
			out = append(out, UnexpectedProbe{Probe: p, Hits: n})
		}
	}
	return out
}

// LookupProbe finds a probe by name.
func LookupProbe(name string) (Probe, bool) {
	for _, p := range Probes() {
		if p.Name == name {
			return p, true
		}
	}
	return Probe{}, false
}

// String is the probe's name.
func (id ProbeID) String() string {
	if int(id) < NumProbes {
		return probeTable()[id].Name
	}
	return "probe-unknown"
}

// ProbeHit is one probe's hit count as /debug/probes reports it.
type ProbeHit struct {
	Name string `json:"name"`
	Hits int64  `json:"hits"`
}

// ProbesResponse is the body of PathDebugProbes: every probe of the role,
// hit or not.
type ProbesResponse struct {
	Role   string     `json:"role"`
	Probes []ProbeHit `json:"probes"`
	// Recorded counts the room events the role's history was asked to
	// write since the process started, by kind, those it did not keep (a
	// room it never knew, a full record) too; read under the same lock as
	// Probes, so the two describe one instant. Absent on the router.
	Recorded map[string]int64 `json:"recorded,omitempty"`
}

// ProbesRecording returns side's probes that record a room event
// (Probe.Records), by event kind, in table order.
func ProbesRecording(side string) map[string][]Probe {
	out := map[string][]Probe{}
	for _, p := range ProbesOf(side) {
		if p.Records != "" {
			out[p.Records] = append(out[p.Records], p)
		}
	}
	return out
}

func pp(id ProbeID, name, doc string) Probe {
	side, _, _ := strings.Cut(name, "/")
	return Probe{ID: id, Name: name, Side: side, Doc: doc}
}

// pn is a Never probe: a hit on the fixed engine is a bug.
func pn(id ProbeID, name, doc string) Probe {
	p := pp(id, name, doc)
	p.Never = true
	return p
}

// records marks the room event kind the probe's branch writes on every
// hit (Probe.Records).
func (p Probe) records(kind string) Probe {
	p.Records = kind
	return p
}

func pr(id ProbeID, name, regression, doc string) Probe {
	p := pp(id, name, doc)
	p.Regression = regression
	return p
}

// probeTable is the one list of probes, in ProbeID order.
func probeTable() []Probe {
	return []Probe{
		pr(ProbePrefillAbortKillsLoop, "prefill/abort-kills-loop", BootstrapThreadDeath, "the loop checked the guard before knowing ABORT and died on one"),
		pr(ProbePrefillMalformedKillsLoop, "prefill/malformed-kills-loop", BootstrapThreadDeath, "a control message that does not parse killed the bootstrap loop"),
		pp(ProbePrefillMalformedControl, "prefill/malformed-control", "a control message that does not parse (or names an unregistered agent) is counted and dropped; the loop carries on"),
		pp(ProbePrefillRegistrationDuplicate, "prefill/registration-duplicate", "a registration for an agent already registered is ignored (first wins)"),
		pp(ProbePrefillDecodeRestarted, "prefill/decode-restarted", "a new agent registered at the notify address of another, or the same Mooncake session_id with new buffers: decode restarted"),
		pp(ProbePrefillMetadataAfterAbort, "prefill/metadata-after-abort", "TransferInfo for a room decode already aborted (tombstoned) is ignored").records(RoomEventFailNotice),
		pp(ProbePrefillMetadataAfterFailure, "prefill/metadata-after-failure", "TransferInfo for a room prefill failed and cleared before it arrived (the client's abort came first) is answered Failed at once, not left to decode's waiting timeout").records(RoomEventFailNotice),
		pp(ProbePrefillRequestAfterFailNotice, "prefill/request-after-fail-notice", "a request for a room whose TransferInfo prefill answered Failed since its last request (the TransferInfo may have been this one's: it names the room only) fails at once, not after its bootstrap timeout"),
		pp(ProbePrefillMetadataFromPredecessor, "prefill/metadata-from-predecessor", "TransferInfo, under a session_id decode re-registered with new buffers, for a room prefill held before that: it may be the dead process's, whose pages the new one hands out again, so the room is failed rather than written").records(RoomEventFailNotice),
		pp(ProbePrefillMetadataUnknownAgent, "prefill/metadata-unknown-agent", "TransferInfo from an agent that never registered is refused"),
		pp(ProbePrefillMetadataDuplicate, "prefill/metadata-duplicate", "a second TransferInfo for a room replaces the first"),
		pp(ProbePrefillMetadataBeforeRequest, "prefill/metadata-before-request", "TransferInfo arrived before prefill's request for the room: the room is opened by decode's message"),
		pp(ProbePrefillAbortHeldRoom, "prefill/abort-held-room", "decode's ABORT for a room prefill holds a request for fails it on that rank"),
		pp(ProbePrefillAbortUnknownRoom, "prefill/abort-unknown-room", "decode's ABORT for a room prefill does not know (not created yet, or cleared)"),
		pp(ProbePrefillAbortDuplicate, "prefill/abort-duplicate", "ABORT for a room already failed or tombstoned (duplicate ABORT, or after a local abort)"),
		pp(ProbePrefillAbortAfterSuccess, "prefill/abort-after-success", "late ABORT for a room whose transfer already succeeded: the room is left alone"),
		pp(ProbePrefillAbortOrphanCleared, "prefill/abort-orphan-cleared", "ABORT for a room only decode's messages opened: cleared at once and tombstoned"),
		pp(ProbePrefillAbortAckDeferred, "prefill/abort-ack-deferred", "ABORT while a worker holds a chunk of the room: the ACK waits until the write drains"),
		pp(ProbePrefillLocalAbort, "prefill/local-abort", "the scheduler's own abort (client gone, /abort_request) fails the room on every rank"),
		pp(ProbePrefillLocalAbortUnknown, "prefill/local-abort-unknown", "an abort for a rid prefill does not hold (finished, or never added) changes nothing"),
		pp(ProbePrefillAddDuplicateRid, "prefill/add-duplicate-rid", "a request whose rid prefill already holds is refused"),
		pp(ProbePrefillAddRoomInUse, "prefill/add-room-in-use", "a request for a room another request holds is refused"),
		pp(ProbePrefillStatusTombstone, "prefill/status-tombstone", "a Failed write for an absent room leaves a tombstone instead of being dropped").records(RoomEventAbortTombstone),
		pr(ProbePrefillAbortDropped, "prefill/abort-dropped", AbortBeforeStatus, "a Failed write for an absent room is dropped (upstream #24539)"),
		pp(ProbePrefillLateWriteDropped, "prefill/late-write-dropped", "a transfer worker's status write for a cleared room is dropped, never re-inserting it").records(RoomEventLateWriteDropped),
		pr(ProbePrefillLateWriteReinserts, "prefill/late-write-reinserts", StatusResurrection, "a transfer worker's late write re-inserts a cleared room"),
		pp(ProbePrefillCreatedAfterAbort, "prefill/created-after-abort", "a room created after its ABORT starts Failed (the tombstone wins)"),
		pp(ProbePrefillFailedSticky, "prefill/failed-sticky", "a write to a Failed room changes nothing: Failed is sticky until clear"),
		pr(ProbePrefillFailedRevived, "prefill/failed-revived", StatusResurrection, "a later write revives a Failed room (also abort-before-status: the sender max-merges over Failed)"),
		pr(ProbePrefillUnknownRoomWaiting, "prefill/unknown-room-waiting", UnknownRoomWaiting, "the status of an absent room reads WaitingForInput instead of Failed"),
		pp(ProbePrefillTombstoneExpired, "prefill/tombstone-expired", "a tombstone older than four bootstrap timeouts is forgotten"),
		pp(ProbePrefillBootstrapTimeout, "prefill/bootstrap-timeout", "a room Bootstrapping past the bootstrap timeout is failed"),
		pp(ProbePrefillBootstrapFailed, "prefill/bootstrap-failed", "a request whose room failed while bootstrapping is finished with bootstrap failed"),
		pp(ProbePrefillFailedBeforeForward, "prefill/failed-before-forward", "a waiting request whose room failed is finished before its forward pass"),
		pp(ProbePrefillInflightTimeout, "prefill/inflight-timeout", "a room transferring past the inflight timeout is failed"),
		pp(ProbePrefillTransferFailed, "prefill/transfer-failed", "an inflight request whose room failed is finished with transfer failed"),
		pp(ProbePrefillFailNotice, "prefill/fail-notice-sent", "a failed room with decode's TransferInfo sends decode a Failed status (#36612)").records(RoomEventFailNotice),
		pp(ProbePrefillFailNoticeDeferred, "prefill/fail-notice-deferred", "the Failed status waits because a worker still holds a chunk of the room").records(RoomEventFailNoticeDeferred),
		pp(ProbePrefillOrphanInfoSwept, "prefill/orphan-info-swept", "decode's TransferInfo for a room no request claimed is swept after the bootstrap timeout"),
		pn(ProbePrefillOrphanStatusSwept, "prefill/orphan-status-swept", "a room status no request and no TransferInfo owns is swept: every ordering that opens a room without a request leaves its TransferInfo too, swept (with the status) first, so a hit means a clear forgot the status"),
		pr(ProbePrefillNoTransferInfo, "prefill/no-transfer-info", UnknownRoomWaiting, "a request forwarded without decode's TransferInfo queues no chunks"),
		pp(ProbePrefillWorkerSkipDead, "prefill/worker-skip-dead-chunk", "a worker skips a queued chunk of a failed or cleared room"),
		pp(ProbePrefillWorkerSendAborted, "prefill/worker-send-aborted", "an ABORT landed while the worker held the chunk: it is released unwritten"),
		pp(ProbePrefillTransferError, "prefill/transfer-error", "a chunk write failed or decode refused it: the room fails"),
		pr(ProbePrefillTransferErrorClears, "prefill/transfer-error-clears", UnknownRoomWaiting, "a transfer failure clears the room, so the Failed write that follows is lost"),
		pp(ProbePrefillAckAfterDrain, "prefill/ack-after-drain", "a deferred ABORT_ACK is sent once the last held chunk of the room is released"),
		pp(ProbePrefillFailNoticeAfterDrain, "prefill/fail-notice-after-drain", "a deferred Failed status is sent once the last held chunk of the room is released").records(RoomEventFailNotice),
		pp(ProbePrefillKVDialFailed, "prefill/kv-dial-failed", "a worker could not dial decode's KV listener"),
		pp(ProbePrefillKVWriteFailed, "prefill/kv-write-failed", "writing a KV chunk to decode failed; the connection is dropped"),
		pp(ProbePrefillKVReadFailed, "prefill/kv-read-failed", "decode's write completion never came back; the connection is dropped"),
		pp(ProbePrefillChunkRefused, "prefill/chunk-refused", "decode answered a chunk with room inactive"),
		pp(ProbePrefillClientGone, "prefill/client-gone", "the /generate caller left before prefill finished: the request is aborted locally"),
		pp(ProbePrefillAbortEndpoint, "prefill/abort-endpoint", "/abort_request named a rid"),
		pp(ProbePrefillRouteUnknownRank, "prefill/route-unknown-rank", "the bootstrap server was asked for a rank prefill does not have (TP mismatch): 404"),
		pp(ProbePrefillNoticeQueueFull, "prefill/notice-queue-full", "a notice to decode is dropped: the peer's send queue is full"),
		pp(ProbePrefillNoticeConnectFailed, "prefill/notice-connect-failed", "a notice to decode is lost: its notify socket could not be dialled"),
		pp(ProbePrefillNoticeSendFailed, "prefill/notice-send-failed", "a notice to decode is lost: the connection broke while sending"),

		pp(ProbeDecodeAddDuplicateRid, "decode/add-duplicate-rid", "a request whose rid decode already holds is refused"),
		pp(ProbeDecodeAddRoomInUse, "decode/add-room-in-use", "a request for a room another request holds (or whose aborted request's pages wait for prefill's ACK) is refused"),
		pp(ProbeDecodeAddRoomReleasedRecently, "decode/add-room-released-recently", "a request for a room released less than a waiting timeout ago is refused: prefill's Failed status for the old request, which names the room only, may still come"),
		pp(ProbeDecodeAddTooLong, "decode/add-too-long", "a prompt that cannot fit in the KV cache is refused"),
		pp(ProbeDecodeAbort, "decode/abort", "abort_request for a held request: applied on every rank at the next step"),
		pp(ProbeDecodeAbortUnknown, "decode/abort-unknown-rid", "an abort for a rid decode does not hold (finished, or never added) changes nothing"),
		pr(ProbeDecodeAbortFlipOnly, "decode/abort-flip-only", DecodeAbortLeak, "the abort flips the receiver and tells prefill but leaves the queues"),
		pr(ProbeDecodeAbortRank0Early, "decode/abort-rank0-early", RankDesync, "rank 0 drops the aborted request from its lists before the other ranks"),
		pr(ProbeDecodeRanksDesynced, "decode/ranks-desynced", RankDesync, "ranks poll lists of different length: the all-reduce never completes"),
		pp(ProbeDecodeAbortAfterFinish, "decode/abort-after-finish", "a queued abort whose request already finished or failed is dropped"),
		pr(ProbeDecodeKVChanged, "decode/kv-changed", FreeBeforeAck, "a running request's KV pages were overwritten while it decoded"),
		pp(ProbeDecodeAckTimeoutFree, "decode/ack-timeout-free", "an aborted room's ABORT went unacknowledged through every resend: its pages are freed and the prefill's name retired").records(BackstopAck),
		pp(ProbeDecodeAbortResent, "decode/abort-resent", "no ABORT_ACK within the ACK timeout: the ABORT is sent again to the ranks that did not acknowledge it").records(BackstopAbortResend),
		pr(ProbeDecodePreallocSkipFlipped, "decode/prealloc-skip-flipped", DecodeAbortLeak, "a flipped (aborted) request lingers in the prealloc queue"),
		pp(ProbeDecodePreallocWaitPages, "decode/prealloc-wait-pages", "not enough free pages: a partial allocation is rolled back and the queue waits"),
		pp(ProbeDecodePreallocFailed, "decode/prealloc-failed", "a room failed while waiting for pages (its prefill was lost) gets no pages and sends no metadata: a write under the new name could land in them after they are freed"),
		pp(ProbeDecodeWaitingTimeout, "decode/waiting-timeout", "a room waiting for KV past the waiting timeout is aborted"),
		pp(ProbeDecodeTransferFailed, "decode/transfer-failed", "a room whose transfer failed is released and its request finished"),
		pp(ProbeDecodeAbortInPrealloc, "decode/abort-in-prealloc", "an abort of a request before its metadata was sent: pages free at once"),
		pp(ProbeDecodeAbortInTransfer, "decode/abort-in-transfer", "an abort during the transfer: pages are held until every prefill rank ACKs"),
		pp(ProbeDecodeAbortWhileRunning, "decode/abort-while-running", "an abort of a request already decoding: prefill is not told"),
		pr(ProbeDecodeFreeBeforeAck, "decode/free-before-ack", FreeBeforeAck, "an abort during the transfer frees pages before prefill's writes drained"),
		pp(ProbeDecodeChunkUnknownRoom, "decode/chunk-unknown-room", "a late KV chunk for a room decode does not hold is refused").records(RoomEventStrayChunk),
		pp(ProbeDecodeChunkWrongStage, "decode/chunk-wrong-stage", "a KV chunk for a held room that is not in its transfer stage is refused").records(RoomEventStrayChunk),
		pp(ProbeDecodeForeignWrite, "decode/foreign-write", "a stray chunk landed in pages another request owns (KV corruption)").records(RoomEventKVOverwritten),
		pp(ProbeDecodeChunkOverrun, "decode/chunk-overruns-pages", "a chunk carries more tokens than its page list covers; the rest is not written"),
		pp(ProbeDecodeChunkPartialToken, "decode/chunk-partial-token", "a chunk whose payload is not a whole number of tokens is refused before anything is written").records(RoomEventMalformedKV),
		pp(ProbeDecodeChunkStaleAgent, "decode/chunk-stale-agent", "a chunk addressed to another agent (a predecessor's registration) is refused").records(RoomEventStaleRegistration),
		pp(ProbeDecodeChunkLostPeer, "decode/chunk-lost-peer", "a KV write addressed to a name decode retired (a prefill declared lost, still writing) is refused before it lands").records(RoomEventLostPeerWrite),
		pp(ProbeDecodeAuxInactive, "decode/aux-inactive-room", "a completion notice for a room not in transfer is refused"),
		pp(ProbeDecodeMalformedNotice, "decode/malformed-notice", "a prefill notice that does not parse is counted and dropped"),
		pp(ProbeDecodeAckFreesPages, "decode/ack-frees-pages", "the last prefill rank's ABORT_ACK frees the aborted room's pages"),
		pp(ProbeDecodeAckUnknownRoom, "decode/ack-unknown-room", "an ABORT_ACK for a room whose pages decode does not hold (late, or freed on timeout)"),
		pp(ProbeDecodeAckDuplicate, "decode/ack-duplicate", "a second ABORT_ACK from the same rank"),
		pp(ProbeDecodeFailNotice, "decode/fail-notice", "prefill reported a held room failed: it fails without waiting for a timeout"),
		pp(ProbeDecodeFailNoticeUnknownRoom, "decode/fail-notice-unknown-room", "a Failed status for a room decode no longer holds is ignored"),
		pr(ProbeDecodeFailNoticeIgnored, "decode/fail-notice-ignored", DecodeAbortLeak, "prefill's Failed status is ignored"),
		pp(ProbeDecodeFailedRanksWriting, "decode/failed-ranks-writing", "a room failed on some ranks' Failed status while other prefill ranks may still write: their pages wait for those ranks' statuses").records(RoomEventPagesHeld),
		pp(ProbeDecodeFailNoticeDrained, "decode/fail-notice-drained", "a Failed status from a prefill rank whose pages waited for it: that rank's writes have drained"),
		pp(ProbeDecodeStatusNotFailed, "decode/status-not-failed", "a status notice decode's dialect does not act on is ignored (other than Failed; on Mooncake, other than Failed and Success)"),
		pp(ProbeDecodeSuccessNoticeInactive, "decode/success-notice-inactive", "a Mooncake Success status for a room decode no longer transfers (aborted, failed, timed out) is ignored").records(RoomEventSuccessIgnored),
		pp(ProbeDecodePrefillLostRoom, "decode/prefill-lost-room", "a room in transfer paired with a lost prefill (or one whose name decode retired) fails at once"),
		pp(ProbeDecodePrefillLostPrealloc, "decode/prefill-lost-prealloc", "a room still waiting for pages, paired with a lost prefill, fails at once"),
		pp(ProbeDecodeRetiredPeerFreesPages, "decode/retired-peer-frees-pages", "an aborted room's held pages are freed when its prefill's name is retired: no write of it can land").records(RoomEventPagesFreed),
		pp(ProbeDecodeUnfencedPagesHeld, "decode/unfenced-pages-held", "a lost prefill's rooms keep their pages until it acknowledges: the wire cannot refuse its writes (Mooncake's session_id carries no epoch)").records(RoomEventPagesHeldUnfenced),
		pp(ProbeDecodeUnfencedAckResent, "decode/unfenced-ack-resent", "an ABORT went unacknowledged through every resend on a wire that cannot retire names: it is sent again and the pages wait, rather than freed under a prefill that may still write"),
		pp(ProbeDecodeFailedSticky, "decode/failed-sticky", "a write to a Failed room changes nothing: Failed is sticky until clear"),
		pn(ProbeDecodeStatusUnexpected, "decode/status-unexpected", "a status branch the fixed decode never takes (tombstone, late worker write, absent room read as waiting, revive) ran on decode: only a regression gets here"),
		pp(ProbeDecodeHeartbeatMiss, "decode/heartbeat-miss", "a prefill's /health did not answer 200 in time"),
		pp(ProbeDecodePrefillLost, "decode/prefill-lost", "a prefill missed heartbeats in a row: its rooms fail and its route is forgotten"),
		pp(ProbeDecodeRouteFailed, "decode/route-failed", "prefill's bootstrap server did not give the control route: the request is refused"),
		pp(ProbeDecodeClientGone, "decode/client-gone", "the /generate caller left before its answer was complete: the request is aborted"),
		pp(ProbeDecodeAbortEndpoint, "decode/abort-endpoint", "/abort_request named a rid"),
		pp(ProbeDecodeKVReadError, "decode/kv-read-error", "a KV connection broke mid-frame or sent a frame that does not parse: it is dropped").records(RoomEventMalformedKV),
		pp(ProbeDecodeKVWrongRank, "decode/kv-wrong-rank", "a KV frame for another rank arrived on this rank's listener: the connection is dropped").records(RoomEventMalformedKV),
		pp(ProbeDecodeKVReplyFailed, "decode/kv-reply-failed", "the write completion could not be sent back to prefill").records(RoomEventKVReplyFailed),
		pp(ProbeDecodeControlNoRoute, "decode/control-no-route", "a control message for a prefill whose route was forgotten (lost) is dropped"),
		pp(ProbeDecodeControlQueueFull, "decode/control-queue-full", "a control message to prefill is dropped: the peer's send queue is full"),
		pp(ProbeDecodeControlConnectFailed, "decode/control-connect-failed", "a control message to prefill is lost: its control socket could not be dialled"),
		pp(ProbeDecodeControlSendFailed, "decode/control-send-failed", "a control message to prefill is lost: the connection broke while sending"),

		pp(ProbeRouterPrefillFailed, "router/prefill-failed", "the prefill request failed (error, cancel or connection loss) or answered an error status"),
		pp(ProbeRouterClientLeftEarly, "router/client-left-early", "the client left before its whole answer was written while the prefill request still ran: both legs are cancelled"),
		pp(ProbeRouterClientLeftMidAnswer, "router/client-left-mid-answer", "the client left while its answer streamed and prefill still ran: the prefill request is cancelled"),
		pp(ProbeRouterDecodeFailed, "router/decode-failed", "the decode request failed before a response: 502"),
		pp(ProbeRouterDecodeErrorStatus, "router/decode-error-status", "decode answered with an error status"),
		pp(ProbeRouterDecodeRefused, "router/decode-refused", "decode refused the request (4xx): the prefill request is cancelled, not left to its bootstrap timeout"),
		pp(ProbeRouterPrefillRefused, "router/prefill-refused", "prefill refused the request (4xx) before decode answered: decode's leg is cancelled, not left to its waiting timeout, and the client gets prefill's refusal"),
		pp(ProbeRouterUpstreamError, "router/upstream-error", "decode's stream carried an error event"),
		pp(ProbeRouterStreamEndedEarly, "router/stream-ended-early", "decode's stream ended or broke before the finish reason"),
		pp(ProbeRouterBadEvent, "router/bad-event", "a stream event that is not JSON is skipped"),
	}
}

// UnhitProbes returns, in table order, the probes no run hit: each run is
// probe name → hits, as a run records them (the gate fails naming these,
// less the ones it lists as unreachable today). Never probes are left
// out: they are asserted (a hit fails the run), not paths to reach.
func UnhitProbes(runs ...map[string]int64) []Probe {
	var out []Probe
	for _, p := range Probes() {
		if p.Never {
			continue
		}
		hit := false
		for _, r := range runs {
			hit = hit || r[p.Name] > 0
		}
		if !hit {
			out = append(out, p)
		}
	}
	return out
}
