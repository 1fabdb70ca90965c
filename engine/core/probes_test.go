package core

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// hits is the rig's probe counts, prefill's, decode's and the router's
// together, by name.
func (r *rig) hits() map[string]int64 {
	out := map[string]int64{}
	for _, p := range contract.Probes() {
		if n := r.p.Probes().Count(p.ID) + r.d.Probes().Count(p.ID) + r.router.Count(p.ID); n > 0 {
			out[p.Name] = n
		}
	}
	return out
}

func hitNames(h map[string]int64) []string {
	var out []string
	for n := range h {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// probeCase is a scripted ordering and the probes it must move.
type probeCase struct {
	name   string
	opts   rigOpts
	script func(r *rig)
	want   []string
}

// reg switches one regression on.
func reg(name string) contract.Regressions { return contract.Regressions{name: true} }

// abortAfterTransfer: the KV is all on decode (prefill's room is Success)
// when decode's abort goes out.
func abortAfterTransfer(r *rig) {
	r.transfer("s", 61, prompt(61, 80), 4)
	r.abortD("s")
	r.stepD()
	r.deliverControl()
	r.finish()
}

// abortWhileRunning aborts a request that is decoding.
func abortWhileRunning(r *rig) {
	r.add("run", 62, prompt(62, 40), 50)
	for range maxRounds {
		r.step()
		if r.answer["run"] != nil {
			break
		}
	}
	r.abortD("run")
	r.abortD("run") // a second abort finds the request gone
	r.finish()
}

// ackTimeout loses prefill's ACKs: decode resends its ABORT AbortResends
// times (the resends are lost too), frees on the last timeout and retires
// prefill's name, then the late ACK arrives.
func ackTimeout(r *rig) {
	r.add("t", 63, prompt(63, 80), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.abortD("t")
	r.stepD()
	r.deliverControl()
	late := r.notices
	r.notices = nil
	for range AbortResends + 1 {
		r.advance(testAckWait + 1)
		r.stepD()
		r.dropAborts()
	}
	r.notices = late
	r.deliverNotices()
	r.finish()
}

// failWhileHeld fails prefill's room while a worker holds its chunk: the
// Failed status waits for the write.
func failWhileHeld(r *rig) {
	const room = 64
	r.add("h", room, prompt(64, 100), 4)
	r.stepD()
	r.deliverControl()
	r.stepP()
	w := workerOf(room)
	r.begin(0, w)
	r.abortP("h")
	r.stepP() // cleared; the notice waits for the held chunk
	r.send(0, w)
	r.finish()
}

// failBeforeForward fails a room between its pop from the bootstrap queue
// and its forward pass (the live runtime spends the forward time there).
func failBeforeForward(r *rig) {
	r.add("f", 72, prompt(72, 40), 4)
	r.stepD()
	r.deliverControl()
	r.p.PopBootstrapped(r.now)
	r.abortP("f")
	fin, _ := r.p.Forward(r.now)
	for _, f := range fin {
		r.pfin[f.Rid] = append(r.pfin[f.Rid], f.Err)
	}
	r.finish()
}

// abortBeforeMetadata: the client's abort reaches prefill, which fails and
// clears the room, before decode has even taken the request (an
// abort_request to both engines, prefill's first); decode's metadata then
// gets a Failed answer at once instead of leaving decode to its waiting
// timeout.
func abortBeforeMetadata(r *rig) {
	r.addP("g", 73, prompt(73, 40))
	r.abortP("g")
	r.stepP()
	r.addD("g", 73, prompt(73, 40), 4)
	r.stepD()
	r.deliverControl()
	r.deliverNotices()
	r.stepD()
	if got := r.dfin["g"]; len(got) != 1 || !errors.Is(got[0], ErrDecodeFailed) {
		r.t.Errorf("decode finished %v after prefill's Failed answer, want one ErrDecodeFailed at once", got)
	}
	r.finish()
}

// retryTransferInfoTaken scripts a client retrying into room: its first
// request reaches prefill and is cancelled there, the retry reaches
// decode, and order places the retry's TransferInfo among prefill's steps.
// The TransferInfo names the room only, so prefill takes it for the first
// request's and answers it Failed, and decode fails the retry. The
// retry's request, reaching prefill last, must meet Failed at once rather
// than wait its bootstrap timeout for a TransferInfo decode will not send
// again. The orders, each seen live:
//   - metadataLast: the first request is cleared before the TransferInfo
//     comes (answered by metadata-after-failure);
//   - onFailedRoom: it comes while prefill still holds the first, failed
//     and not yet cleared (answered as the room clears);
//   - beforeFirst: it comes before the first request even reaches prefill.
func retryTransferInfoTaken(order string, room uint64) func(r *rig) {
	return func(r *rig) {
		first, retry := prompt(int(room), 40), prompt(int(room)+1, 40)
		decodeSends := func() {
			r.addD("retry", room, retry, 4)
			r.stepD()
			r.deliverControl()
		}
		switch order {
		case "metadataLast":
			r.addP("first", room, first)
			r.abortP("first")
			r.stepP()
			decodeSends()
		case "onFailedRoom":
			r.addP("first", room, first)
			r.p.Abort(r.now, "first") // failed, cleared at the next step
			decodeSends()
			r.stepP()
		case "beforeFirst":
			decodeSends()
			r.addP("first", room, first)
			r.p.Abort(r.now, "first")
			r.stepP()
		default:
			r.t.Fatalf("unknown order %q", order)
		}
		r.deliverNotices()
		r.stepD()
		if got := r.dfin["retry"]; len(got) != 1 || !errors.Is(got[0], ErrDecodeFailed) {
			r.t.Errorf("decode finished the retry with %v, want one ErrDecodeFailed", got)
		}
		r.addP("retry", room, retry)
		r.stepP()
		if got := r.pfin["retry"]; len(got) != 1 || got[0] == nil {
			r.t.Errorf("prefill finished the retry with %v at once, want one failure (not a wait for its bootstrap timeout)", got)
		}
		r.finish()
	}
}

// directNotices feeds decode notices it must ignore or refuse.
func directNotices(r *rig) {
	wire := dialectOf("")
	r.addD("n", 65, prompt(65, 40), 4)
	r.stepD()
	r.d.OnNotice(r.now, 0, wire.Status(65, Success, 0, ""))
	r.d.OnNotice(r.now, 0, wire.Status(999, Failed, 0, "gone"))
	r.d.OnNotice(r.now, 0, wire.Status(65, Failed, 0, "first"))
	r.d.OnNotice(r.now, 0, wire.Status(65, Failed, 0, "again"))
	r.addD("pre", 71, prompt(71, 40), 4) // still in prealloc
	r.d.OnChunk(r.now, 0, 71, 0, false, nil, 0, nil)
	r.d.OnAux(r.now, 0, 998)
	r.d.OnChunk(r.now, 0, 65, 0, false, nil, 0, make([]byte, model.KVBytesPerToken))
	r.d.RefuseChunk(r.now, 0, 65, 1, "decode-old")
	r.d.OnPrefillLost(r.now, testBootstrap)
	r.finish()
}

// duplicates sends the messages and requests SGLang may see twice.
// roomReleasedRecently: a request for a room decode released less than a
// waiting timeout ago is refused (prefill's Failed status for the old
// request could still come and would fail it); past that, it is served.
func roomReleasedRecently(r *rig) {
	r.add("first", 70, prompt(70, 40), 4)
	r.settle()
	if r.d.Add(r.now, "copy", 70, testBootstrap, nil, 1) == nil {
		r.t.Error("decode accepted a request for a room it released a moment ago")
	}
	r.advance(testTimeout + time.Millisecond)
	r.add("later", 70, prompt(71, 40), 4)
	r.settle()
	r.finish()
}

func duplicates(r *rig) {
	wire := dialectOf("")
	a := r.d.cfg.Agents[0]
	regn := Registration{DecodeIP: a.IP, DecodePort: a.NotifyPort, AgentName: r.d.AgentName(0, testBootstrap), KVAddr: "10.0.0.2:9200", DecodeTP: 1, DstNumSlots: 64}
	r.p.OnControl(r.now, 0, wire.Registration(regn)) // same agent again
	regn.AgentName = "decode-agent-0-restarted"
	r.p.OnControl(r.now, 0, wire.Registration(regn)) // same socket, new agent
	r.add("dup", 66, prompt(66, 40), 4)
	r.stepD()
	r.collect()
	meta := r.ctl[0]
	r.ctl = append(r.ctl, meta) // TransferInfo twice
	r.deliverControl()
	if r.p.Add(r.now, "dup", 67, nil) == nil || r.p.Add(r.now, "other", 66, nil) == nil {
		r.t.Error("prefill accepted a duplicate rid or room")
	}
	if r.d.Add(r.now, "dup", 67, testBootstrap, nil, 1) == nil || r.d.Add(r.now, "other", 66, testBootstrap, nil, 1) == nil {
		r.t.Error("decode accepted a duplicate rid or room")
	}
	if r.d.Add(r.now, "huge", 68, testBootstrap, make([]model.Token, 16*r.d.cfg.Pages+1), 1) == nil {
		r.t.Error("decode accepted a prompt longer than its cache")
	}
	r.p.Abort(r.now, "nobody")
	r.d.Abort(r.now, "nobody")
	r.finish()
}

// orphanMetadata: decode's TransferInfo for a room prefill never gets; later
// an ABORT for a room prefill never gets either, forgotten in time.
func orphanMetadata(r *rig) {
	r.addD("o", 69, prompt(69, 40), 4)
	r.stepD()
	r.deliverControl()
	r.advance(testTimeout + 1)
	r.stepP()
	wire := dialectOf("")
	r.ctl = append(r.ctl, DecodeOut{Bootstrap: testBootstrap, Frames: wire.Abort(Abort{Room: 70, DecodeIP: "10.0.0.2", DecodePort: 9100})},
		DecodeOut{Bootstrap: testBootstrap, Frames: wire.Metadata(Metadata{Room: 70, DecodeIP: "10.0.0.2", DecodePort: 9100, AgentName: r.d.AgentName(0, testBootstrap), Pages: []uint32{1}})})
	r.deliverControl()
	r.advance(4*testTimeout + 1)
	r.stepP()
	r.finish()
}

// clientGoneAndAbortRequests: the router's connections to both engines
// go away for one request, and /abort_request names another on both; an
// empty rid matches nothing.
func clientGoneAndAbortRequests(r *rig) {
	r.add("gone", 71, prompt(71, 80), 4)
	r.add("asked", 72, prompt(72, 80), 4)
	r.stepD()
	r.p.OnClientGone(r.now, 71, "gone")
	r.d.OnClientGone(r.now, "gone")
	r.p.OnAbortRequest(r.now, "asked")
	r.d.OnAbortRequest(r.now, "asked")
	r.p.OnAbortRequest(r.now, "")
	r.d.OnAbortRequest(r.now, "")
	r.collect()
	r.finish()
}

// heartbeatsLost: prefill misses decode's heartbeats until it is declared
// lost, with a room paired.
func heartbeatsLost(r *rig) {
	r.add("hb", 73, prompt(73, 80), 4)
	r.stepD()
	for i := 0; i < HeartbeatFailures; i++ {
		if lost, _ := r.d.OnHeartbeat(r.now, testBootstrap, false); lost != (i == HeartbeatFailures-1) {
			r.t.Fatalf("miss %d: lost %v", i+1, lost)
		}
	}
	r.collect()
	r.finish()
}

// strangers: what a peer that is not the engine sends reaches the core's
// refusals: a route lookup for a rank prefill lacks (and for one it has,
// which moves nothing), a KV message for rank 1 on rank 0's listener, one
// cut mid-frame, and a completion decode cannot send back. A request in
// flight meanwhile still gets its exact answer.
func strangers(r *rig) {
	r.add("s", 75, prompt(75, 80), 4)
	r.stepD()
	for _, d := range contract.RouteDialects() {
		for rank, want := range []bool{true, true, false} {
			q, err := contract.ParseRouteQuery(mustParseQuery(r.t, d.Query(contract.RouteRank{TP: rank})))
			if err != nil {
				r.t.Fatal(err)
			}
			if got, ok := r.p.RouteRank(q); ok != want || ok && got != rank {
				r.t.Errorf("%s: route to rank %d: %d, %v", d.Name, rank, got, ok)
			}
		}
	}
	if !r.d.AdmitKVRank(r.now, 0, 0, 75) || !r.d.AdmitKVRank(r.now, 1, 1, 75) {
		r.t.Error("a KV listener refused a message for its own rank")
	}
	if r.d.AdmitKVRank(r.now, 0, 1, 75) {
		r.t.Error("a KV message for rank 1 was admitted on rank 0's listener")
	}
	r.d.OnKVUnreadable(r.now, 0, 75, "cut mid-frame")
	if r.d.OnChunk(r.now, 1, 75, 0, false, []uint32{0}, 0, make([]byte, model.KVBytesPerToken/2+1)) {
		r.t.Error("a chunk that is not whole tokens was taken")
	}
	r.d.OnKVReplyFailed(r.now, 1, 75)
	r.finish()
	r.checkAnswer("s")
}

func mustParseQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// mooncakeSuccessAfterAbort: on Mooncake, decode gives a room up (its
// client left) after prefill's last write, before prefill's Success status
// arrives; the late Success is ignored.
func mooncakeSuccessAfterAbort(r *rig) {
	r.transfer("s", 74, prompt(74, 80), 4)
	r.abortD("s")
	r.stepD()
	r.deliverNotices()
	r.finish()
}

// routerLegs runs the router's book through refusals on each side, a
// failed decode, a client leaving mid-answer and a broken stream.
func routerLegs(r *rig) {
	l := NewLegs(&r.router)
	l.PrefillAnswered(400)
	l.DecodeAnswered(0)
	l = NewLegs(&r.router)
	l.DecodeAnswered(400)
	l.DecodeError(false)
	l = NewLegs(&r.router)
	l.DecodeAnswered(0)
	l = NewLegs(&r.router)
	l.DecodeAnswered(200)
	l.Event([]byte("not json"))
	l.Event([]byte(`{"error":{"message":"decode failed"}}`))
	l.StreamEnded(false, false)
	l.ClientGone(true)
}

func probeCases() []probeCase {
	malformed := func(r *rig) {
		r.p.OnControl(r.now, 0, [][]byte{[]byte("junk")})
		r.d.OnNotice(r.now, 0, [][]byte{[]byte("junk")})
		m := dialectOf("").Metadata(Metadata{Room: 5, AgentName: "nobody", Pages: []uint32{1}})
		r.p.OnControl(r.now, 0, m)
	}
	bootstrapTimeout := func(r *rig) {
		r.add("g", 101, prompt(101, 80), 4)
		r.stepD()
		r.ctl = nil // metadata lost
		r.advance(testTimeout + 1)
		r.stepP()
		r.finish()
	}
	inflightTimeout := func(r *rig) {
		r.add("g", 102, prompt(102, 80), 4)
		r.stepD()
		r.deliverControl()
		r.stepP()
		r.advance(testTimeout + 1)
		r.finish()
	}
	waitingTimeout := func(r *rig) {
		r.addD("g", 103, prompt(103, 80), 4)
		r.settle()
		r.advance(testTimeout + 1)
		r.finish()
	}
	prealloc := func(r *rig) {
		r.add("big", 91, prompt(91, 200), 4)
		r.add("x", 92, prompt(92, 100), 4)
		r.stepD()
		r.abortD("x")
		r.finish()
	}
	twoRanksDoubleAck := func(r *rig) {
		r.add("x", 93, prompt(93, 100), 4)
		r.stepD()
		r.abortD("x")
		r.stepD()
		r.deliverControl()
		r.collect()
		for _, n := range r.notices {
			if n.Rank == 0 {
				r.d.OnNotice(r.now, 0, n.Frames) // rank 0's ACK twice
			}
		}
		r.finish()
	}
	desync := func(r *rig) {
		r.add("x", 94, prompt(94, 100), 4)
		r.stepD()
		r.abortD("x")
		r.stepD()
		r.stepD()
	}
	unguarded := func(r *rig) {
		scriptUnguardedAbort(r)
		r.stepD() // y's metadata reaches a dead loop
		r.deliverControl()
	}
	deadLoop := func(r *rig) { r.p.OnControl(r.now, 0, [][]byte{[]byte("junk")}) }
	leakPrealloc := func(r *rig) {
		r.add("big", 95, prompt(95, 200), 4)
		r.add("x", 96, prompt(96, 100), 4)
		r.stepD()
		r.abortD("x")
		r.stepD()
		r.d.OnNotice(r.now, 0, dialectOf("").Status(95, Failed, 0, "x"))
	}
	return []probeCase{
		{"abort-before-room", rigOpts{}, func(r *rig) { scriptAbortBeforeAdd(r); r.finish() },
			[]string{"prefill/abort-unknown-room", "prefill/status-tombstone", "prefill/created-after-abort", "prefill/bootstrap-failed", "decode/abort", "decode/abort-in-prealloc"}},
		{"metadata-then-abort", rigOpts{}, func(r *rig) { scriptMetaThenAbort(r); r.finish() },
			[]string{"prefill/metadata-before-request", "prefill/abort-orphan-cleared", "decode/abort-in-transfer", "decode/ack-frees-pages"}},
		{"abort-in-pause-window", rigOpts{}, func(r *rig) { scriptResurrection(r); r.finish() },
			[]string{"prefill/abort-held-room", "prefill/abort-ack-deferred", "prefill/worker-send-aborted", "prefill/ack-after-drain", "prefill/transfer-failed"}},
		{"late-worker-write", rigOpts{}, func(r *rig) { scriptTransferErrorBeforeAbort(r); r.finish() },
			[]string{"prefill/transfer-error", "prefill/abort-duplicate", "prefill/failed-sticky", "decode/chunk-unknown-room"}},
		{"worker-skips-cleared-room", rigOpts{}, failWhileHeld,
			[]string{"prefill/local-abort", "prefill/fail-notice-deferred", "prefill/fail-notice-after-drain", "prefill/worker-skip-dead-chunk", "prefill/worker-send-aborted", "decode/fail-notice"}},
		{"abort-after-success", rigOpts{}, abortAfterTransfer, []string{"prefill/abort-after-success"}},
		{"abort-while-running", rigOpts{}, abortWhileRunning, []string{"decode/abort-while-running", "decode/abort-after-finish"}},
		{"ack-timeout", rigOpts{}, ackTimeout, []string{"decode/abort-resent", "decode/ack-timeout-free", "decode/ack-unknown-room"}},
		{"lost-peer-write", rigOpts{}, scriptLostPeerWrite, []string{"decode/chunk-lost-peer", "decode/prefill-lost-room", "decode/transfer-failed"}},
		{"lost-while-awaiting-ack", rigOpts{}, scriptLostWhileAwaitingAck, []string{"decode/retired-peer-frees-pages"}},
		{"mooncake-lost-holds-pages", rigOpts{wire: contract.WireMooncake}, scriptMooncakeLostHoldsPages, []string{"decode/unfenced-pages-held", "decode/prefill-lost-room", "decode/ack-frees-pages"}},
		{"mooncake-unacked-abort", rigOpts{wire: contract.WireMooncake}, scriptMooncakeUnackedAbort, []string{"decode/unfenced-ack-resent", "decode/abort-resent"}},
		{"malformed", rigOpts{}, malformed, []string{"prefill/malformed-control", "prefill/metadata-unknown-agent", "decode/malformed-notice"}},
		{"bootstrap-timeout", rigOpts{}, bootstrapTimeout, []string{"prefill/bootstrap-timeout", "prefill/bootstrap-failed", "decode/waiting-timeout"}},
		{"inflight-timeout", rigOpts{}, inflightTimeout, []string{"prefill/inflight-timeout", "prefill/transfer-failed", "prefill/fail-notice-sent", "decode/fail-notice", "decode/transfer-failed"}},
		{"waiting-timeout", rigOpts{}, waitingTimeout, []string{"decode/waiting-timeout", "decode/abort-in-transfer", "prefill/metadata-before-request", "prefill/orphan-info-swept"}},
		{"prealloc-waits-for-pages", rigOpts{decodePages: 16}, prealloc, []string{"decode/prealloc-wait-pages", "decode/abort-in-prealloc"}},
		{"notices", rigOpts{}, directNotices, []string{"decode/status-not-failed", "decode/fail-notice-unknown-room", "decode/fail-notice", "decode/failed-sticky",
			"decode/aux-inactive-room", "decode/chunk-wrong-stage", "decode/chunk-overruns-pages", "decode/chunk-stale-agent", "decode/prefill-lost-room"}},
		{"duplicates", rigOpts{}, duplicates, []string{"prefill/registration-duplicate", "prefill/decode-restarted", "prefill/metadata-duplicate",
			"prefill/add-duplicate-rid", "prefill/add-room-in-use", "decode/add-duplicate-rid", "decode/add-room-in-use", "decode/add-too-long",
			"prefill/local-abort-unknown", "decode/abort-unknown-rid"}},
		{"room-released-recently", rigOpts{}, roomReleasedRecently, []string{"decode/add-room-released-recently"}},
		{"orphans", rigOpts{}, orphanMetadata, []string{"prefill/orphan-info-swept", "prefill/abort-unknown-room", "prefill/metadata-after-abort", "prefill/tombstone-expired"}},
		{"failed-before-forward", rigOpts{}, failBeforeForward, []string{"prefill/failed-before-forward", "prefill/local-abort"}},
		{"abort-before-metadata", rigOpts{}, abortBeforeMetadata, []string{"prefill/metadata-after-failure", "decode/fail-notice"}},
		{"retry-metadata-last", rigOpts{}, retryTransferInfoTaken("metadataLast", 74), []string{"prefill/metadata-after-failure", "prefill/request-after-fail-notice"}},
		{"retry-metadata-on-failed-room", rigOpts{}, retryTransferInfoTaken("onFailedRoom", 76), []string{"prefill/fail-notice-sent", "prefill/request-after-fail-notice"}},
		{"retry-metadata-before-first", rigOpts{}, retryTransferInfoTaken("beforeFirst", 78), []string{"prefill/fail-notice-sent", "prefill/request-after-fail-notice"}},
		{"tp2-duplicate-ack", rigOpts{ranks: 2}, twoRanksDoubleAck, []string{"decode/ack-duplicate", "decode/ack-frees-pages"}},
		{"client-gone-and-abort-requests", rigOpts{}, clientGoneAndAbortRequests, []string{"prefill/client-gone", "decode/client-gone",
			"prefill/abort-endpoint", "decode/abort-endpoint", "prefill/local-abort", "decode/abort"}},
		{"mooncake-held-transfer-info", rigOpts{wire: contract.WireMooncake}, mooncakeHeldTransferInfo, []string{"prefill/metadata-from-predecessor", "prefill/decode-restarted"}},
		{"mooncake-success-after-abort", rigOpts{wire: contract.WireMooncake}, mooncakeSuccessAfterAbort, []string{"decode/success-notice-inactive"}},
		{"strangers", rigOpts{ranks: 2}, strangers, []string{"prefill/route-unknown-rank", "decode/kv-wrong-rank", "decode/kv-read-error", "decode/kv-reply-failed", "decode/chunk-partial-token"}},
		{"heartbeats-lost", rigOpts{}, heartbeatsLost, []string{"decode/heartbeat-miss", "decode/prefill-lost", "decode/prefill-lost-room"}},
		{"router-legs", rigOpts{}, routerLegs, []string{"router/prefill-failed", "router/prefill-refused", "router/decode-refused",
			"router/decode-failed", "router/decode-error-status", "router/upstream-error", "router/bad-event", "router/stream-ended-early",
			"router/client-left-early", "router/client-left-mid-answer"}},
		// Regression branches: each regression's own probes move.
		{"abort-before-status", rigOpts{reg: reg(contract.AbortBeforeStatus)}, func(r *rig) { scriptAbortBeforeAdd(r); scriptMetaThenAbort(r) },
			[]string{"prefill/abort-dropped", "prefill/failed-revived"}},
		{"status-resurrection", rigOpts{reg: reg(contract.StatusResurrection)}, scriptResurrection, []string{"prefill/late-write-reinserts"}},
		{"unknown-room-waiting", rigOpts{reg: reg(contract.UnknownRoomWaiting)}, scriptTransferErrorBeforeAbort,
			[]string{"prefill/transfer-error-clears", "prefill/unknown-room-waiting"}},
		{"bootstrap-thread-death-abort", rigOpts{reg: reg(contract.BootstrapThreadDeath)}, unguarded, []string{"prefill/abort-kills-loop"}},
		{"bootstrap-thread-death-malformed", rigOpts{reg: reg(contract.BootstrapThreadDeath)}, deadLoop, []string{"prefill/malformed-kills-loop"}},
		{"decode-abort-leak", rigOpts{reg: reg(contract.DecodeAbortLeak), decodePages: 16}, leakPrealloc,
			[]string{"decode/abort-flip-only", "decode/prealloc-skip-flipped", "decode/fail-notice-ignored"}},
		{"rank-desync", rigOpts{reg: reg(contract.RankDesync), ranks: 2}, desync,
			[]string{"decode/abort-rank0-early", "decode/ranks-desynced"}},
		{"free-before-ack", rigOpts{reg: reg(contract.FreeBeforeAck)}, scriptFreeBeforeAck, []string{"decode/free-before-ack", "decode/foreign-write"}},
		{"partial-failure-tp2", rigOpts{ranks: 2, decodePages: 40}, scriptPartialFailure, []string{"decode/failed-ranks-writing", "decode/fail-notice-drained"}},
		// A Never probe's branch, reached by breaking the state directly
		// (no message ordering leaves a status nothing owns): the sweep
		// counts it and clears it.
		{"orphan-status", rigOpts{}, orphanStatus, []string{"prefill/orphan-status-swept"}},
	}
}

// orphanStatus leaves a room status no request and no TransferInfo owns,
// as a clear that forgot it would, and checks the next step sweeps it.
func orphanStatus(r *rig) {
	r.p.ranks[0].status.Update(r.now, 4242, Success, WriterBootstrap, "left behind on purpose")
	r.stepP()
	if r.p.ranks[0].status.Has(4242) {
		r.t.Fatal("an orphan status outlived the sweep")
	}
}

// notScriptedInCore lists the core probes no scripted case reaches, and why.
// The runtime's probes are tested through the live engine (package engine).
func notScriptedInCore() map[string]string {
	return map[string]string{
		"prefill/no-transfer-info": "needs an absent room that reads WaitingForInput on one rank while another forwards (unknown-room-waiting, TP>1)",
		"decode/kv-changed":        "needs a late write into the pages of a request already decoding (free-before-ack, with the write landing after commit)",
		"decode/status-unexpected": "the fixed decode never gets here (it writes Failed only for rooms it holds and has no transfer workers); only a regression that loosens the status table does",
	}
}

// TestProbesMove drives scripted orderings through the pure core and
// checks that each moves the probes of the branches it takes; together the
// cases must hit every core probe except those notScriptedInCore names.
func TestProbesMove(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	union := map[string]bool{}
	t.Run("cases", func(t *testing.T) {
		for _, tc := range probeCases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := newRig(t, tc.opts)
				tc.script(r)
				got := r.hits()
				for _, w := range tc.want {
					if _, ok := contract.LookupProbe(w); !ok {
						t.Fatalf("case names unknown probe %s", w)
					}
					if got[w] == 0 {
						t.Errorf("probe %s not hit; hit: %v", w, hitNames(got))
					}
				}
				mu.Lock()
				for n := range got {
					union[n] = true
				}
				mu.Unlock()
			})
		}
	})
	skip := notScriptedInCore()
	var missed []string
	for _, p := range contract.Probes() {
		core := slices.ContainsFunc(p.Sites, func(s string) bool { return strings.HasPrefix(s, "engine/core/") })
		if !core || union[p.Name] {
			continue
		}
		if _, ok := skip[p.Name]; !ok {
			missed = append(missed, fmt.Sprintf("%s (%s)", p.Name, p.Sites[0]))
		}
	}
	if len(missed) > 0 {
		t.Errorf("core probes no scripted case hits (script one, or list it in notScriptedInCore with why):\n  %s", strings.Join(missed, "\n  "))
	}
	for n := range skip {
		if union[n] {
			t.Errorf("probe %s is hit by a scripted case: drop it from notScriptedInCore", n)
		}
	}
}

// TestCleanRunHitsNoProbe: a request that goes through untouched takes no
// failure branch, so every probe stays at zero.
func TestCleanRunHitsNoProbe(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ranks: 2})
	r.add("ok", 7, prompt(7, 150), 6)
	r.finish()
	r.checkAnswer("ok")
	if got := r.hits(); len(got) > 0 {
		t.Errorf("clean run hit probes %v", got)
	}
}

// TestProbeCountsPerInstance: each side counts into its own counters unless
// it is given shared ones.
func TestProbeCountsPerInstance(t *testing.T) {
	t.Parallel()
	a, b := newRig(t, rigOpts{}), newRig(t, rigOpts{})
	a.p.Abort(a.now, "nobody")
	if a.p.Probes().Count(contract.ProbePrefillLocalAbortUnknown) != 1 || b.p.Probes().Count(contract.ProbePrefillLocalAbortUnknown) != 0 {
		t.Error("probe counts leak between engine instances")
	}
	shared := &ProbeCounts{}
	p := NewPrefill(PrefillConfig{Probes: shared}, NewHistory(0))
	p.Abort(a.now, "nobody")
	if shared.Count(contract.ProbePrefillLocalAbortUnknown) != 1 {
		t.Error("prefill did not count into the counters it was given")
	}
	var none *ProbeCounts
	none.Hit(contract.ProbePrefillLocalAbort) // nil counts nothing, never panics
	if none.Count(contract.ProbePrefillLocalAbort) != 0 {
		t.Error("nil counters counted")
	}
	if got := shared.Side(contract.SidePrefill); len(got) != len(contract.ProbesOf(contract.SidePrefill)) {
		t.Errorf("Side lists %d probes, want every prefill probe", len(got))
	}
}

// TestProbedBranchesRecordTheirEvents: in every scripted case, each side's
// history counts exactly one event of a probe's Records kind per hit of
// the side's probes that record it (branches-recorded's rule, held in the
// core), also for rooms the history never knew and did not keep.
func TestProbedBranchesRecordTheirEvents(t *testing.T) {
	t.Parallel()
	seen := map[string]int64{}
	for _, tc := range probeCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			tc.script(r)
			for _, side := range []struct {
				name   string
				probes *ProbeCounts
				hist   *History
			}{{contract.SidePrefill, r.p.Probes(), r.ph}, {contract.SideDecode, r.d.Probes(), r.dh}} {
				rec := side.hist.Recorded()
				for kind, ps := range contract.ProbesRecording(side.name) {
					var hits int64
					var names []string
					for _, p := range ps {
						hits += side.probes.Count(p.ID)
						names = append(names, p.Name)
					}
					if rec[kind] != hits {
						t.Errorf("%s: %d %q events recorded, %d hits of the probes recording it (%v)", side.name, rec[kind], kind, hits, names)
					}
					seen[side.name+" "+kind] += hits
				}
			}
		})
	}
	for _, side := range []string{contract.SidePrefill, contract.SideDecode} {
		for kind := range contract.ProbesRecording(side) {
			if seen[side+" "+kind] == 0 {
				t.Errorf("%s: no scripted case writes a %q event: the rule is never exercised for it", side, kind)
			}
		}
	}
}

// TestNoteKnownCountsWhatItDoesNotKeep: an event about a room the history
// never knew is counted, not kept; about a known room, both.
func TestNoteKnownCountsWhatItDoesNotKeep(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewHistory(0)
	h.NoteKnown(now, 7, "decode", 0, contract.RoomEventStrayChunk, "room never held")
	if h.Known(7) {
		t.Fatal("a note about an unknown room opened a record")
	}
	h.Add(now, 8, "decode", 0, contract.RoomEventStatus, Bootstrapping, "opened")
	h.NoteKnown(now, 8, "decode", 0, contract.RoomEventStrayChunk, "room held")
	held, _ := h.Snapshot()
	if len(held) != 1 || len(held[0].Events) != 2 {
		t.Fatalf("held records %+v, want room 8 with its two events", held)
	}
	if got := h.Recorded(); got[contract.RoomEventStrayChunk] != 2 || got[contract.RoomEventStatus] != 1 {
		t.Errorf("Recorded() = %v, want 2 stray-chunk (one not kept) and 1 status", got)
	}
	var none *History
	if none.Recorded() != nil {
		t.Error("a nil history recorded events")
	}
}

// TestBackstopsWriteTheirEvents: every case that fires a backstop (its
// probe moves) leaves the room event contract.Backstops gives it, in
// prefill's or decode's history, on a room the engine held; and a case that
// fires none leaves no such event. timeouts-explained finds fired
// backstops by these events alone.
func TestBackstopsWriteTheirEvents(t *testing.T) {
	t.Parallel()
	fired := map[string]bool{}
	for _, tc := range probeCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			tc.script(r)
			got := r.hits()
			var evs []contract.Event
			for _, h := range []*History{r.ph, r.dh} {
				held, cleared := h.Snapshot()
				for _, rec := range append(held, cleared...) {
					evs = append(evs, rec.Events...)
				}
			}
			for _, b := range contract.Backstops() {
				hit := got[b.Probe.String()] > 0
				wrote := slices.ContainsFunc(evs, b.FiredBy)
				if hit != wrote {
					t.Errorf("backstop %s: probe hit %v, event written %v (%s %q)", b.Name, hit, wrote, b.Kind, b.Detail)
				}
				if hit {
					fired[b.Name] = true
				}
			}
		})
	}
	for _, b := range contract.Backstops() {
		if !fired[b.Name] {
			t.Errorf("no scripted case fires backstop %s", b.Name)
		}
	}
}
