package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// DefaultFaultMargin widens a fault window when it explains a backstop:
// a fault's effect outlives its heal a little (a restarted process comes
// up, a proxy's held bytes drain) and a room created just before it began
// can still be caught by it.
const DefaultFaultMargin = time.Second

// DefaultRaceWindow is how soon before a backstop fired the peer may have
// ended the room (or sent the notice the backstop waits for) with that
// notice still in flight: the backstop raced it, nothing was lost.
const DefaultRaceWindow = time.Second

// Explanations of a fired backstop, as the evidence counts them.
const (
	explainedFault      = "explained_fault"
	explainedRegression = "explained_regression"
	explainedLoad       = "explained_load"
	explainedRace       = "explained_race"
	explainedPeer       = "explained_peer_backstop"
)

// firing is one backstop that fired on one room.
type firing struct {
	b    contract.Backstop
	room uint64
	at   time.Time
}

// checkTimeoutsExplained: on the fixed engine a backstop (contract.Backstops)
// is the last resort when a message is lost, so every one that fired must
// be explained: by a fault window overlapping the room's life (widened by
// DefaultFaultMargin), by a regression switched on, by load (the peer still
// held the room live when it fired: its ranks' states merged with MIN, as
// SGLang's all-reduce does, neither Failed nor Success) or by a race (the
// peer ended the room, or sent what the backstop waits for, less than
// DefaultRaceWindow earlier). Nothing explains one that fired before its
// deadline had run from what starts its clock (premature), nor, unless a
// fault stopped the role's loops, one that fired well after it (overdue).
// And no room stays in a state longer than its
// deadline (contract.StateDeadlines) plus contract.StateMargin, unless a
// process or engine fault (which can stop the loop that enforces it)
// overlapped that stay. Decode declaring prefill lost sooner than its
// heartbeat misses in a row allow, across a stop or kill of prefill's
// process, fails too (lossesTooSoon). Logs without the engine config or ended rooms (an
// external target, or recorded before this checker) are skipped.
func checkTimeoutsExplained(v *View) CheckResult {
	ev := map[string]int64{"backstops_fired": 0, "backstops_premature": 0, "backstops_overdue": 0, explainedFault: 0, explainedRegression: 0, explainedLoad: 0, explainedRace: 0, explainedPeer: 0,
		"unexplained": 0, "states_checked": 0, "states_over_deadline": 0, "states_excused_by_fault": 0, "records_truncated": 0,
		"peer_losses_judged": 0, "peer_losses_too_soon": 0, "failures_unanswered": 0}
	switch {
	case v.Run.Engine == nil:
		return result(contract.CheckTimeoutsExplained, Skip, ev, "the log records no engine config (an external target, or recorded before timeouts-explained)")
	case len(v.Final) == 0 && len(v.Ended) == 0:
		return result(contract.CheckTimeoutsExplained, Skip, ev, "the target exposes no /debug/rooms")
	case len(v.Ended) == 0:
		return result(contract.CheckTimeoutsExplained, Skip, ev, "the log keeps no ended rooms (recorded before they were logged)")
	case v.Run.BaseWall.IsZero():
		return result(contract.CheckTimeoutsExplained, Inconclusive, ev, "the log has no base wall time to place room events")
	}
	// Resolve fills what a partial config leaves out; a zero deadline must
	// not bound every state at nothing.
	cfg, _, err := v.Run.Engine.Resolve()
	if err != nil {
		return result(contract.CheckTimeoutsExplained, Inconclusive, ev, "the log's engine config is invalid: %v", err)
	}
	recs := roomsByRole(v)
	n := 0
	for _, rs := range recs {
		n += len(rs)
	}
	if n == 0 {
		return result(contract.CheckTimeoutsExplained, Inconclusive, ev, "no room was recorded: nothing to judge")
	}
	// bad are the failures with the room's histories; heads the same
	// without them, for the summary line.
	var bad, heads []string
	var stuck []StuckRoom
	addStuck := func(role string, r contract.RoomRecord, since time.Duration) {
		if len(stuck) < maxStuck {
			stuck = append(stuck, StuckRoom{Role: role, Room: r.Room, State: r.State, Ranks: r.Ranks, Since: since,
				ActiveFaults: v.activeAt(since), Events: r.Events})
		}
	}
	// explained keeps each explained firing by role and room, so a later
	// backstop on the same room can be explained by it (firings come in
	// time order).
	explained := map[string]map[uint64]firing{}
	for _, f := range firings(recs) {
		ev["backstops_fired"]++
		peerRole := peerOf(f.b.Role)
		own := recs[f.b.Role][f.room]
		peer, hasPeer := recs[peerRole][f.room]
		if why := premature(f, own, cfg); why != "" {
			// A deadline measured from the wrong moment, or the wrong
			// deadline: no fault excuses the engine's own clock.
			ev["backstops_premature"]++
			head := fmt.Sprintf("room %d: %s on %s fired at %v, too early: %s", f.room, f.b.Name, f.b.Role, f.at.Sub(v.Run.BaseWall).Round(time.Millisecond), why)
			heads, bad = append(heads, head), append(bad, head+fmt.Sprintf("; %s history: %s", f.b.Role, historyLine(own.Events, v.Run.BaseWall)))
			addStuck(f.b.Role, own, f.at.Sub(v.Run.BaseWall))
			continue
		}
		if why := v.overdue(f, own, cfg); why != "" {
			ev["backstops_overdue"]++
			head := fmt.Sprintf("room %d: %s on %s fired at %v, late: %s", f.room, f.b.Name, f.b.Role, f.at.Sub(v.Run.BaseWall).Round(time.Millisecond), why)
			heads, bad = append(heads, head), append(bad, head+fmt.Sprintf("; %s history: %s", f.b.Role, historyLine(own.Events, v.Run.BaseWall)))
			addStuck(f.b.Role, own, f.at.Sub(v.Run.BaseWall))
		}
		how, why := v.explain(f, own, peer, hasPeer)
		if how == "" && peerBackstopExplains(f, explained[peerRole][f.room], own, cfg) {
			how = explainedPeer
		}
		if how != "" {
			ev[how]++
			if explained[f.b.Role] == nil {
				explained[f.b.Role] = map[uint64]firing{}
			}
			if _, ok := explained[f.b.Role][f.room]; !ok {
				explained[f.b.Role][f.room] = f
			}
			continue
		}
		ev["unexplained"]++
		at := f.at.Sub(v.Run.BaseWall)
		head := fmt.Sprintf("room %d: %s on %s fired at %v (room created at %v), unexplained: %s",
			f.room, f.b.Name, f.b.Role, at.Round(time.Millisecond), own.Created.Sub(v.Run.BaseWall).Round(time.Millisecond), why)
		line := head + fmt.Sprintf("; %s history: %s", f.b.Role, historyLine(own.Events, v.Run.BaseWall))
		if hasPeer {
			line += fmt.Sprintf("; %s history: %s", peerRole, historyLine(peer.Events, v.Run.BaseWall))
		}
		heads, bad = append(heads, head), append(bad, line)
		addStuck(f.b.Role, own, at)
		if hasPeer {
			addStuck(peerRole, peer, at)
		}
	}
	for _, id := range sortedRooms(recs[contract.SideDecode]) {
		r := recs[contract.SideDecode][id]
		if why := resentTooSoon(r, cfg.AckTimeout); why != "" && nonClear(r.Events) < contract.MaxRoomEvents {
			ev["backstops_premature"]++
			head := fmt.Sprintf("room %d: decode %s", id, why)
			heads, bad = append(heads, head), append(bad, head+"; decode history: "+historyLine(r.Events, v.Run.BaseWall))
		}
	}
	margin := contract.StateMargin(cfg)
	bounds := stateBounds(cfg)
	for _, role := range sortedSources(recs) {
		for _, id := range sortedRooms(recs[role]) {
			r := recs[role][id]
			if nonClear(r.Events) >= contract.MaxRoomEvents {
				ev["records_truncated"]++
				continue
			}
			for _, o := range v.overruns(role, r, bounds[role], margin, ev) {
				heads, bad = append(heads, o.head), append(bad, o.head+"; history: "+historyLine(r.Events, v.Run.BaseWall))
				addStuck(role, r, o.since)
			}
		}
	}
	// finding records one violation of a rule read off one room's record.
	finding := func(key, role, head string, r contract.RoomRecord, at time.Duration) {
		ev[key]++
		heads, bad = append(heads, head), append(bad, head+"; "+role+" history: "+historyLine(r.Events, v.Run.BaseWall))
		addStuck(role, r, at)
	}
	if len(v.Run.Engine.Regressions) == 0 {
		for _, id := range sortedRooms(recs[contract.SidePrefill]) {
			if head, at := v.failureUnanswered(recs[contract.SidePrefill][id], cfg); head != "" {
				finding("failures_unanswered", contract.SidePrefill, head, recs[contract.SidePrefill][id], at)
			}
		}
		for _, l := range v.lossesTooSoon(recs[contract.SideDecode], cfg, ev) {
			finding("peer_losses_too_soon", contract.SideDecode, l.head, l.room, l.at)
		}
		losses := peerLosses(recs[contract.SideDecode], v.Run.BaseWall)
		for _, id := range sortedRooms(recs[contract.SideDecode]) {
			if head, at := v.outlivedPeerLoss(recs[contract.SideDecode][id], cfg, losses); head != "" {
				finding("outlived_peer_loss", contract.SideDecode, head, recs[contract.SideDecode][id], at)
			}
		}
	}
	if len(bad) > 0 {
		res := result(contract.CheckTimeoutsExplained, Fail, ev, "%d unexplained backstops, %d fired before their deadline, %d long after it, %d room states past their deadline, %d rooms outliving prefill's loss, %d losses declared too soon, %d failures prefill did not answer: %s",
			ev["unexplained"], ev["backstops_premature"], ev["backstops_overdue"], ev["states_over_deadline"], ev["outlived_peer_loss"], ev["peer_losses_too_soon"], ev["failures_unanswered"], joinLimit(heads, 2))
		res.Details, res.Stuck = bad, stuck
		return res
	}
	return result(contract.CheckTimeoutsExplained, Pass, ev,
		"%d backstops fired, all explained (%d fault, %d load, %d race, %d regression, %d by the peer's deadline); %d room states within their deadlines",
		ev["backstops_fired"], ev[explainedFault], ev[explainedLoad], ev[explainedRace], ev[explainedRegression], ev[explainedPeer], ev["states_checked"])
}

// premature says why f fired before its deadline had run from the last
// event that starts its clock (contract.Backstop.ClockStart) on its own
// record, or "" when it did not (or nothing marks its clock, or the record
// is truncated and the start may be lost). The engine writes the start and
// the firing with the same clock, so no margin is needed.
func premature(f firing, own contract.RoomRecord, cfg contract.EngineConfig) string {
	start, d, ok := clockOf(f, own, cfg)
	what := f.b.ClockStart
	if !ok {
		start, what, d, ok = restartedClockOf(f, own, cfg)
	}
	if !ok {
		return ""
	}
	if ran := f.at.Sub(start); ran < d {
		return fmt.Sprintf("%v after its clock started (%s), %s is %v", ran.Round(time.Millisecond), what, f.b.Config, d)
	}
	return ""
}

// clockOf is when f's clock last started before it fired (the latest
// event on its own record that starts it) and its deadline; ok is false
// when nothing marks its clock, it has no deadline, or the record was cut.
func clockOf(f firing, own contract.RoomRecord, cfg contract.EngineConfig) (start time.Time, d time.Duration, ok bool) {
	d = f.b.Deadline(cfg)
	if f.b.ClockStart == "" || d <= 0 || nonClear(own.Events) >= contract.MaxRoomEvents {
		return start, d, false
	}
	for _, e := range own.Events {
		if !e.At.After(f.at) && f.b.StartsClock(e) && e.At.After(start) {
			start = e.At
		}
	}
	return start, d, !start.IsZero()
}

// overdue says why f fired later than its deadline plus lateMargin after
// its clock last started, or "" when it did not: the loop that enforces a
// deadline looks every check interval, so one that fires far later has
// looked at the wrong rooms or the wrong clock, and the room was held
// that much longer than the operator configured. (A room's stay in a state
// is bounded more loosely, by StateMargin, in overruns.) A fault that
// stops the role's loops excuses it.
func (v *View) overdue(f firing, own contract.RoomRecord, cfg contract.EngineConfig) string {
	start, d, ok := clockOf(f, own, cfg)
	what := f.b.ClockStart
	if !ok {
		start, what, d, ok = restartedClockOf(f, own, cfg)
	}
	if !ok {
		return ""
	}
	ran, margin := f.at.Sub(start), v.lateMargin(f, cfg)
	if ran <= d+margin || v.stopFaultDuring(f.b.Role, start.Sub(v.Run.BaseWall), f.at.Sub(v.Run.BaseWall)) {
		return ""
	}
	return fmt.Sprintf("%v after its clock started (%s), %s is %v (%v margin)", ran.Round(time.Millisecond), what, f.b.Config, d, margin)
}

// restartedClockOf is, for a backstop whose clock several events restart
// (contract.Backstop.ClockRestarts), the latest of them on its own record
// strictly before it fired (the firing may itself restart the clock, as
// a resend does), what it was, and the deadline from it; ok is false when
// there is none, the backstop has no deadline, or the record was cut.
func restartedClockOf(f firing, own contract.RoomRecord, cfg contract.EngineConfig) (start time.Time, what string, d time.Duration, ok bool) {
	d = f.b.RestartDeadline(cfg)
	if len(f.b.ClockRestarts) == 0 || d <= 0 || nonClear(own.Events) >= contract.MaxRoomEvents {
		return start, "", d, false
	}
	for _, e := range own.Events {
		if e.Side == f.b.Role && e.At.Before(f.at) && slices.Contains(f.b.ClockRestarts, e.Kind) && !e.At.Before(start) {
			start, what = e.At, e.Kind
		}
	}
	return start, what, d, !start.IsZero()
}

// prefillStep bounds how long prefill's scheduler may take to act on what
// it was given (pair a request with its TransferInfo, sweep an orphan
// TransferInfo past its deadline): DefaultRaceWindow live; in the
// simulator two check intervals and one forward pass of a full batch, as
// lateMargin allows prefill's deadlines.
func (v *View) prefillStep(cfg contract.EngineConfig) time.Duration {
	if v.Run.Target != SimTarget {
		return DefaultRaceWindow
	}
	if r, _, err := cfg.Resolve(); err == nil {
		cfg = r // a log's partial config: the defaults the engine ran with
	}
	return 2*cfg.CheckInterval + forwardPass(cfg)
}

// forwardPass is one prefill forward pass of a full batch at cfg's prefill
// speed (0 when unlimited).
func forwardPass(cfg contract.EngineConfig) time.Duration {
	if cfg.PrefillTokensPerSec <= 0 {
		return 0
	}
	return time.Duration(float64(contract.DefaultMaxPrefillTokens) / cfg.PrefillTokensPerSec * float64(time.Second))
}

// lateMargin is how long after its deadline f may fire: StateMargin
// live, where a loaded machine delays the loops; in the simulator, whose
// clock is the engine's own, two check intervals, plus on decode a decode
// step and on prefill one forward pass of a full batch
// (contract.DefaultMaxPrefillTokens at the scenario's prefill speed):
// prefill's scheduler enforces its deadlines between passes, as SGLang's.
func (v *View) lateMargin(f firing, cfg contract.EngineConfig) time.Duration {
	if v.Run.Target != SimTarget {
		return contract.StateMargin(cfg)
	}
	m := 2 * cfg.CheckInterval
	switch {
	case f.b.Role == contract.SideDecode && cfg.DecodeTokensPerSec > 0:
		m += time.Duration(float64(time.Second) / cfg.DecodeTokensPerSec)
	case f.b.Role == contract.SidePrefill:
		m += forwardPass(cfg)
	}
	return m
}

// resentTooSoon says why decode's ABORT resends for r came too close
// together, or "" when they did not: each resend restarts the ACK clock,
// so the next resend, and the give-up that frees the pages without the
// ACK (BackstopAck), come at least ack after it. (The first resend's
// clock starts on an abort or on pages held for other ranks' writes,
// which a reused room can write again without restarting it: not judged.)
func resentTooSoon(r contract.RoomRecord, ack time.Duration) string {
	if ack <= 0 {
		return ""
	}
	resend, giveUp := contract.LookupBackstop(contract.BackstopAbortResend), contract.LookupBackstop(contract.BackstopAck)
	var last time.Time
	for _, e := range sortedEvents(r.Events) {
		isResend, isGiveUp := resend.FiredBy(e), giveUp.FiredBy(e)
		if !isResend && !isGiveUp {
			continue
		}
		if !last.IsZero() && e.At.Sub(last) < ack {
			what := "resent an ABORT"
			if isGiveUp {
				what = "gave up on the ACK"
			}
			return fmt.Sprintf("%s %v after its last resend, within ack_timeout %v", what, e.At.Sub(last).Round(time.Millisecond), ack)
		}
		if isResend {
			last = e.At
		}
	}
	return ""
}

// explain says how a fired backstop is explained (an evidence key), or
// "" and why not.
func (v *View) explain(f firing, own, peer contract.RoomRecord, hasPeer bool) (how, why string) {
	if regs := v.Run.Engine.Regressions; len(regs) > 0 {
		return explainedRegression, ""
	}
	base := v.Run.BaseWall
	from := own.Created
	if hasPeer && !peer.Created.IsZero() && peer.Created.Before(from) {
		from = peer.Created
	}
	if sent, ok := v.Sent[f.room]; ok && base.Add(sent).Before(from) {
		// The router sent both legs when the client's request came: a
		// fault then (decode killed as its leg came) may be why a leg
		// that reached its engine only later waits for the other.
		from = base.Add(sent)
	}
	if why := unsentFailNotice(f, own, peer, hasPeer); why != "" {
		// No fault explains it: nothing stops prefill sending.
		return "", why
	}
	if why := v.failureNotAnswered(f, own, peer, hasPeer); why != "" {
		return "", why
	}
	if why := v.laterFailureNotAnswered(f, own, peer, hasPeer); why != "" {
		return "", why
	}
	if sent := failNoticeSent(f, own, peer, hasPeer, v.Run.Engine.TP); !sent.IsZero() && f.at.Sub(sent) >= DefaultRaceWindow {
		// Prefill told decode the room failed, long enough before: only
		// a fault that can lose or hold back that notice explains decode
		// waiting out its deadline (a KV or control link fault cannot).
		if v.noticeFaultDuring(sent.Sub(base), sent.Sub(base)-DefaultFaultMargin, f.at.Sub(base)+DefaultFaultMargin) {
			return explainedFault, ""
		}
		what := "its failure notice"
		if f.b.Name != contract.BackstopWaiting {
			what = "the failure notices decode held the room's pages for (every rank's, or its Success)"
		}
		return "", fmt.Sprintf("prefill sent %s %v before, and no fault on a notify link, a process or an engine loop was active to lose it",
			what, f.at.Sub(sent).Round(time.Millisecond))
	}
	if done := transferDoneAt(f, own, peer, hasPeer); !done.IsZero() && !v.Run.Engine.Wire.SuccessOnControl() && f.at.Sub(done) >= DefaultRaceWindow {
		// Prefill records Success only once decode acknowledged every
		// write and the completion after them: decode had its KV. Only
		// decode's own scheduler standing still explains its waiting
		// deadline after that (a link fault cannot take back what decode
		// acknowledged).
		if v.stopFaultDuring(contract.SideDecode, done.Sub(base)-DefaultFaultMargin, f.at.Sub(base)+DefaultFaultMargin) {
			return explainedFault, ""
		}
		return "", fmt.Sprintf("prefill's transfer of the room had completed (Success on every rank, each write and the completion after them acknowledged by decode) %v before, and decode's scheduler was not stopped",
			f.at.Sub(done).Round(time.Millisecond))
	}
	if why := v.transferInfoLost(f, own, peer, hasPeer); why != "" {
		return "", why
	}
	if v.faultExplaining(f.b, from.Sub(base)-DefaultFaultMargin, f.at.Sub(base)+DefaultFaultMargin) {
		return explainedFault, ""
	}
	if !hasPeer {
		return "", fmt.Sprintf("%s has no record of the room", peerOf(f.b.Role))
	}
	p := peerAt(peer, f.at, f.b.PeerNotice)
	if f.b.PeerNotice != "" && !p.notice.IsZero() {
		d := f.at.Sub(p.notice)
		if d < DefaultRaceWindow {
			return explainedRace, ""
		}
		return "", fmt.Sprintf("%s recorded %s %v before it (state %s then): it never arrived", peerOf(f.b.Role), f.b.PeerNotice, d.Round(time.Millisecond), p.state)
	}
	if why := requestNeverCame(f, peer); why != "" {
		return "", why
	}
	switch {
	case p.live:
		return explainedLoad, ""
	case !p.held && p.firstAt.After(f.at):
		return explainedLoad, "" // the peer got to the room only after: it was behind
	case !p.endAt.IsZero() && f.at.Sub(p.endAt) < DefaultRaceWindow:
		return explainedRace, ""
	case !p.endAt.IsZero():
		return "", fmt.Sprintf("%s had ended the room %v before (state %s, last state %s)", peerOf(f.b.Role), f.at.Sub(p.endAt).Round(time.Millisecond), p.state, peer.LastState)
	}
	return "", fmt.Sprintf("%s never held the room (state %s)", peerOf(f.b.Role), p.state)
}

// transferInfoLost says why decode's waiting deadline f is unexplained
// when prefill took the room's request before, or within its bootstrap
// timeout after, decode sent the TransferInfo (prefill keeps a
// TransferInfo that long for a request yet to come), and was still
// Bootstrapping, waiting for that TransferInfo, when the deadline fired
// (each with prefillStep to spare):
// the TransferInfo was lost inside prefill unless a fault that can lose
// or hold it back was on. A request later than that may find the
// TransferInfo swept, and its delay (a fault on the router's link to
// prefill) is the excuse the caller looks for. "" when f is another
// backstop or the records say otherwise.
func (v *View) transferInfoLost(f firing, own, peer contract.RoomRecord, hasPeer bool) string {
	if f.b.Name != contract.BackstopWaiting || !hasPeer || nonClear(peer.Events) >= contract.MaxRoomEvents {
		return ""
	}
	var sent, req time.Time
	for _, e := range own.Events {
		if e.Kind == contract.RoomEventMetadataSent && !e.At.After(f.at) {
			sent = e.At
		}
	}
	for _, e := range sortedEvents(peer.Events) {
		if createsRequest(e) && !e.At.After(f.at) {
			req = e.At
		}
	}
	step := v.prefillStep(*v.Run.Engine)
	if sent.IsZero() || req.IsZero() || f.at.Sub(sent) < v.Run.Engine.WaitingTimeout ||
		req.Sub(sent) > v.Run.Engine.BootstrapTimeout-step || f.at.Sub(req) < step {
		return ""
	}
	if p := peerAt(peer, f.at, ""); p.state != contract.StateBootstrapping {
		return ""
	}
	base := v.Run.BaseWall
	if v.answerFaultDuring(sent.Sub(base)-DefaultFaultMargin, f.at.Sub(base)+DefaultFaultMargin) {
		return ""
	}
	return fmt.Sprintf("prefill took the request %v after decode sent its TransferInfo (within its bootstrap timeout) and was still waiting for that TransferInfo %v later, with no fault on a control or notify link, a process or prefill's bootstrap loop to lose it",
		req.Sub(sent).Round(time.Millisecond), f.at.Sub(req).Round(time.Millisecond))
}

// faultExplaining reports whether an applied fault window that can hold
// back what backstop b waits for overlaps [from, to]: any fault but those
// on the targets b lists as Unexcused.
func (v *View) faultExplaining(b contract.Backstop, from, to time.Duration) bool {
	for _, f := range v.Faults {
		if f.Applied && f.Start <= to && (f.End == 0 || f.End >= from) && !slices.Contains(b.Unexcused, faultTarget(f.Fault)) {
			return true
		}
	}
	return false
}

// requestNeverCame says why decode's waiting deadline f is unexplained
// when prefill's record of the room, whole, holds no request for it: only
// decode's TransferInfo opened it there. The router sends both legs at
// once and, when prefill refuses its leg, gives the client that refusal
// and cancels decode's; a leg lost on the way needs a fault, which the
// caller has already looked for. So decode waiting out its deadline for
// KV of a request prefill never got is the router dropping a leg, however
// busy prefill was. "" when f is another backstop, or the record is
// truncated (its request may be among the events lost) or has a request.
func requestNeverCame(f firing, peer contract.RoomRecord) string {
	if f.b.Name != contract.BackstopWaiting || len(peer.Events) == 0 || nonClear(peer.Events) >= contract.MaxRoomEvents {
		return ""
	}
	for _, e := range peer.Events {
		if createsRequest(e) {
			return ""
		}
	}
	return "prefill never got the room's request (only decode's TransferInfo opened the room there), and no fault was on to lose it: the router let decode wait for KV of a request prefill refused or never saw"
}

// peerState is a room on one side at one moment.
type peerState struct {
	// held: some rank had a status by then; live: the ranks' states merged
	// with MIN (a cleared rank reads Failed) are neither Failed nor Success.
	held, live bool
	// state is the merged state ("none" before any status).
	state string
	// endAt is when the merged state first became Failed or Success (zero
	// if not by then); notice when the backstop's PeerNotice was last
	// recorded (zero if not); firstAt is the record's first event.
	endAt, notice, firstAt time.Time
}

// peerAt replays r's events up to t; notice is the event kind whose last
// time by then peerState.notice keeps ("" for none).
func peerAt(r contract.RoomRecord, t time.Time, notice string) peerState {
	ps := peerState{state: "none"}
	ranks := map[int]string{}
	for i, e := range sortedEvents(r.Events) {
		if i == 0 {
			ps.firstAt = e.At
		}
		if e.At.After(t) {
			break
		}
		switch e.Kind {
		case contract.RoomEventStatus:
			ranks[e.Rank] = e.State
		case contract.RoomEventClear:
			ranks[e.Rank] = contract.StateFailed // an absent room is dead
		}
		if notice != "" && e.Kind == notice {
			ps.notice = e.At
		}
		if len(ranks) > 0 {
			ps.held = true
			ps.state = mergeMin(ranks)
			if contract.TerminalState(ps.state) && ps.endAt.IsZero() {
				ps.endAt = e.At
			}
		}
	}
	ps.live = ps.held && !contract.TerminalState(ps.state)
	return ps
}

// overrun is one stay past its state's deadline: what it was, and when it
// began (offset from the run's base).
type overrun struct {
	head  string
	since time.Duration
}

// boundedState is a state's deadline and its bound under the run's config.
type boundedState struct {
	contract.StateDeadline
	bound time.Duration
}

// stateBounds are contract.StateDeadlines by role and state, each bound
// under cfg worked out once per judged run, not once per stay.
func stateBounds(cfg contract.EngineConfig) map[string]map[string]boundedState {
	out := map[string]map[string]boundedState{}
	for _, s := range contract.StateDeadlines() {
		if out[s.Role] == nil {
			out[s.Role] = map[string]boundedState{}
		}
		out[s.Role][s.State] = boundedState{s, s.Bound(cfg)}
	}
	return out
}

// overruns lists r's stays in a bounded state (bounds: role's, by state)
// longer than the bound plus margin, counting every stay it judges.
func (v *View) overruns(role string, r contract.RoomRecord, bounds map[string]boundedState, margin time.Duration, ev map[string]int64) []overrun {
	evs := sortedEvents(r.Events)
	firstOf := func(kind string) time.Time {
		for _, e := range evs {
			if e.Kind == kind {
				return e.At
			}
		}
		return time.Time{}
	}
	var out []overrun
	type stay struct {
		state string
		since time.Time
	}
	cur := map[int]stay{}
	end := func(rank int, at time.Time) {
		s, ok := cur[rank]
		delete(cur, rank)
		sd, bounded := bounds[s.state]
		if !ok || !bounded {
			return
		}
		start := s.since
		if sd.From != "" {
			from := firstOf(sd.From)
			if from.IsZero() {
				return // the clock never started: no deadline ran
			}
			if from.After(start) {
				start = from
			}
		}
		ev["states_checked"]++
		d, bound := at.Sub(start), sd.bound
		if d <= bound+margin {
			return
		}
		if v.stopFaultDuring(role, start.Sub(v.Run.BaseWall), at.Sub(v.Run.BaseWall)) {
			ev["states_excused_by_fault"]++
			return
		}
		ev["states_over_deadline"]++
		out = append(out, overrun{since: start.Sub(v.Run.BaseWall), head: fmt.Sprintf("room %d on %s rank %d: %s for %v from %v, past its %v deadline (%v margin)",
			r.Room, role, rank, s.state, d.Round(time.Millisecond), start.Sub(v.Run.BaseWall).Round(time.Millisecond), bound, margin)})
	}
	for _, e := range evs {
		switch e.Kind {
		case contract.RoomEventStatus:
			if s, ok := cur[e.Rank]; ok && s.state == e.State {
				continue
			}
			end(e.Rank, e.At)
			cur[e.Rank] = stay{e.State, e.At}
		case contract.RoomEventClear:
			end(e.Rank, e.At)
		}
	}
	return out // a stay still open at the end is a held room: rooms-terminal's
}

// stopFaultDuring reports whether a fault that can stop role's scheduler,
// the loop that enforces its deadlines, overlapped [from, to]: the role's
// process stopped or killed, or its scheduler stalled. A fault on the
// peer, on a link or on another loop (a paused transfer worker, a stalled
// bootstrap loop) leaves the deadline to fire, so it excuses no overrun.
func (v *View) stopFaultDuring(role string, from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		if n := faults.ReadName(f.Fault); n.Role == role && n.Can(faults.StopsDeadlines) {
			return true
		}
	}
	return false
}

// noticeFaultDuring reports whether a fault that can lose or hold back a
// notice prefill sent at offset sent overlapped [from, to]: one on a notify
// link (contract.NotifyLink), a process fault (a role stopped or killed),
// a fault on decode's engine loops, or a network or protocol fault whose
// link its name does not give. Client faults, faults on other links and
// duplicates (faults.DuplicatesOnly: every message still arrives) cannot;
// nor can a fault on prefill's engine loops (a stalled bootstrap loop or
// scheduler, paused transfer workers) unless it was on when prefill sent
// the notice: one healed before it, or begun after it, holds nothing the
// engine had already handed to its sender.
func (v *View) noticeFaultDuring(sent, from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		n := faults.ReadName(f.Fault)
		switch f.Layer {
		case faults.LayerClient:
			continue
		case faults.LayerNetwork, faults.LayerProtocol:
			if n.Link != "" && !contract.IsNotifyLink(n.Link) || faults.DuplicatesOnly(f.Fault) {
				continue
			}
		case faults.LayerEngine:
			if n.Role != contract.SideDecode && (f.Start > sent || f.End != 0 && f.End < sent) {
				continue
			}
		}
		return true
	}
	return false
}

// transferDoneAt is when prefill's record of the room first read Success
// on every rank it held, in decode's current request's life and before its
// waiting deadline f fired; zero when f is another backstop or that never
// happened by then.
func transferDoneAt(f firing, own, peer contract.RoomRecord, hasPeer bool) time.Time {
	if f.b.Name != contract.BackstopWaiting || !hasPeer {
		return time.Time{}
	}
	// This life's transfer only: an earlier request in the reused room
	// may have completed its own.
	_, life := lifeOf(own.Events, f.at)
	ranks := map[int]string{}
	for _, e := range sortedEvents(peer.Events) {
		if e.At.After(f.at) {
			break
		}
		if e.At.Before(life) {
			continue
		}
		switch e.Kind {
		case contract.RoomEventStatus:
			ranks[e.Rank] = e.State
		case contract.RoomEventClear:
			ranks[e.Rank] = contract.StateFailed
		default:
			continue
		}
		if mergeMin(ranks) == contract.StateSuccess {
			return e.At
		}
	}
	return time.Time{}
}

// failNoticeSent is when prefill had told decode, by failure notices, all
// that decode's backstop f waited for, or zero when f is another backstop,
// prefill recorded no such notice, or it did not tell all of it:
//   - decode's waiting deadline: prefill's last failure notice before it;
//   - decode's ABORT resend or ACK give-up on a room whose pages it held,
//     with no ABORT sent, for the Failed statuses of prefill ranks still
//     writing: the moment every one of tp prefill ranks had either sent
//     its failure notice or written Success (its KV all acknowledged), the
//     fixed engine frees the pages on the last of them. A room decode sent
//     an ABORT for waits for its ACK instead (judged by
//     contract.Backstop.PeerNotice).
func failNoticeSent(f firing, own, peer contract.RoomRecord, hasPeer bool, tp int) time.Time {
	var at time.Time
	if !hasPeer {
		return at
	}
	switch f.b.Name {
	case contract.BackstopWaiting:
		// Only this life's notices: one prefill sent before decode's
		// request was created was about an earlier request in the room
		// (a client retrying in its own room), which decode took then.
		_, life := lifeOf(own.Events, f.at)
		for _, e := range peer.Events {
			if e.Kind == contract.RoomEventFailNotice && !e.At.After(f.at) && !e.At.Before(life) && e.At.After(at) {
				at = e.At
			}
		}
	case contract.BackstopAbortResend, contract.BackstopAck:
		for _, e := range own.Events {
			if e.Kind == contract.RoomEventAbortSent && !e.At.After(f.at) {
				return at
			}
		}
		told := map[int]time.Time{}
		for _, e := range sortedEvents(peer.Events) {
			if e.At.After(f.at) {
				break
			}
			if _, ok := told[e.Rank]; ok {
				continue
			}
			if e.Kind == contract.RoomEventFailNotice || e.Kind == contract.RoomEventStatus && e.State == contract.StateSuccess {
				told[e.Rank] = e.At
				at = e.At
			}
		}
		if len(told) < max(tp, 1) {
			return time.Time{}
		}
	}
	return at
}

// firings lists each backstop that fired on each room once (its first
// event), in time order.
func firings(recs map[string]map[uint64]contract.RoomRecord) []firing {
	var out []firing
	for _, b := range contract.Backstops() {
		for _, id := range sortedRooms(recs[b.Role]) {
			for _, e := range recs[b.Role][id].Events {
				if b.FiredBy(e) {
					out = append(out, firing{b: b, room: id, at: e.At})
					break
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// outlivedPeerLoss says why a decode room that waited for its KV is a
// violation when prefill's process was stopped or killed for longer than
// decode's heartbeats take to declare it lost (contract.PeerLossDetection,
// plus DefaultFaultMargin): the loss fails every room paired with that
// prefill at once (SGLang's heartbeat thread), so a room decode had taken
// by then (waiting for pages or for its KV) must have ended by then, not waited on
// for the prefill to come back or for its waiting deadline (300 s on
// SGLang). "" when that is not the case. Rooms that lived past the
// moment are judged; one still held at the end is rooms-terminal's. A room
// paired after decode had already declared prefill lost in that outage
// (losses, from peerLosses) is not: the loss is declared once, and the
// room waits for prefill to come back as any room paired later does.
func (v *View) outlivedPeerLoss(r contract.RoomRecord, cfg contract.EngineConfig, losses []time.Duration) (string, time.Duration) {
	if cfg.HeartbeatInterval <= 0 {
		return "", 0
	}
	base := v.Run.BaseWall
	var paired, last time.Duration = -1, -1
	for _, e := range r.Events {
		at := e.At.Sub(base)
		if paired < 0 || at < paired {
			// The request's arrival: a room still waiting for pages is
			// paired with its prefill too, and fails with it.
			paired = at
		}
		last = max(last, at)
	}
	if paired < 0 {
		return "", 0
	}
	detect, margin := contract.PeerLossDetection(cfg), v.lossMargin(cfg)
	for _, w := range v.Faults {
		if !w.Applied || w.Layer != faults.LayerProcess || faults.ReadName(w.Fault).Role != contract.SidePrefill {
			continue
		}
		if w.Fault == faults.KillName(contract.SidePrefill, true) {
			// Restarted at once: down for its start-up, not the window.
			continue
		}
		from, ok := v.decodeUpFrom(w.Start, detect+margin)
		lost := from + detect + margin
		if !ok || paired >= from+detect || (w.End != 0 && w.End < lost) || last < lost {
			continue
		}
		if slices.ContainsFunc(losses, func(l time.Duration) bool { return l >= w.Start-detect-margin && l <= paired }) {
			continue
		}
		if ps := peerAt(r, base.Add(lost), ""); ps.held && ps.live {
			return fmt.Sprintf("room %d on decode still %s at %v: %s from %v to %v, long enough for decode's heartbeats (every %v, lost after %d misses) to declare prefill lost and fail the room",
				r.Room, ps.state, lost.Round(time.Millisecond), w.Fault, w.Start.Round(time.Millisecond), w.End.Round(time.Millisecond),
				cfg.HeartbeatInterval, contract.HeartbeatFailures), lost
		}
	}
	return "", 0
}

// peerLosses lists the moments decode declared a prefill lost, read off
// the rooms the loss failed (one loss fails every paired room at once).
func peerLosses(decode map[uint64]contract.RoomRecord, base time.Time) []time.Duration {
	seen := map[time.Duration]bool{}
	var out []time.Duration
	for _, id := range sortedRooms(decode) {
		for _, e := range decode[id].Events {
			if _, why, ok := strings.Cut(e.Detail, ": "); ok && e.Kind == contract.RoomEventStatus && e.Side == contract.SideDecode &&
				e.State == contract.StateFailed && strings.HasPrefix(why, contract.PeerLostDetail) && !seen[e.At.Sub(base)] {
				seen[e.At.Sub(base)] = true
				out = append(out, e.At.Sub(base))
			}
		}
	}
	slices.Sort(out)
	return out
}

// lossMargin is how late after PeerLossDetection a prefill stopped or
// killed may be declared lost: DefaultFaultMargin live, where a starved
// heartbeat thread and the harness's signal run late; a quarter of a
// heartbeat interval in the simulator, whose clock is the engine's own and
// whose heartbeat polls a stopped prefill every few milliseconds, so one
// miss too many (an interval) shows.
func (v *View) lossMargin(cfg contract.EngineConfig) time.Duration {
	if v.Run.Target == SimTarget {
		return cfg.HeartbeatInterval / 4
	}
	return DefaultFaultMargin
}

// SimTarget is RunInfo.Target of a run in the deterministic simulator.
const SimTarget = "sim"

// failureUnanswered says why prefill's record of a room is a violation
// when a rank failed the room before decode's TransferInfo reached it (a
// client's abort, the bootstrap deadline, decode's ABORT, or that ABORT
// remembered for a room the rank did not hold yet), cleared it,
// and then took a TransferInfo for it as a new one within its failure
// memory (contract.FailureMemory) without telling decode: the fixed
// engine answers such a TransferInfo with a Failed status (or, for a room
// decode aborted, ignores it), so decode is not left to wait out its
// waiting deadline (300 s on SGLang) and nothing is reopened just to be
// swept. A new request for the room starts afresh; a kill of prefill's
// process in between (the successor remembers nothing) excuses it. "" when
// that is not the case.
func (v *View) failureUnanswered(r contract.RoomRecord, cfg contract.EngineConfig) (string, time.Duration) {
	base := v.Run.BaseWall
	memory := contract.FailureMemory(cfg)
	type rankState struct {
		metadata, cleared, answered bool
		failedAt                    time.Time
	}
	ranks := map[int]*rankState{}
	at := func(rank int) *rankState {
		if ranks[rank] == nil {
			ranks[rank] = &rankState{}
		}
		return ranks[rank]
	}
	for _, e := range sortedEvents(r.Events) {
		if e.Side != contract.SidePrefill {
			continue
		}
		if createsRequest(e) {
			// A request for the room, new or a retry: its own life.
			for _, st := range ranks {
				*st = rankState{}
			}
			continue
		}
		st := at(e.Rank)
		switch e.Kind {
		case contract.RoomEventStatus:
			if e.State == contract.StateFailed && st.failedAt.IsZero() && !st.metadata {
				st.failedAt = e.At
			}
		case contract.RoomEventAbortTombstone:
			// Decode's ABORT for a room the rank did not hold: remembered
			// as Failed, with nothing held to clear.
			if st.failedAt.IsZero() && !st.metadata {
				st.failedAt, st.cleared = e.At, true
			}
		case contract.RoomEventClear:
			if !st.failedAt.IsZero() {
				st.cleared = true
			}
		case contract.RoomEventFailNotice, contract.RoomEventFailNoticeDeferred:
			st.answered = true
		case contract.RoomEventMetadata:
			if st.cleared && !st.answered && e.At.Sub(st.failedAt) < memory &&
				!v.roleKilledDuring(contract.SidePrefill, st.failedAt.Sub(base), e.At.Sub(base)) {
				return fmt.Sprintf("room %d: prefill rank %d failed it at %v before decode's TransferInfo came, then took one at %v (within its failure memory of %v) as new and told decode nothing",
					r.Room, e.Rank, st.failedAt.Sub(base).Round(time.Millisecond), e.At.Sub(base).Round(time.Millisecond), memory), e.At.Sub(base)
			}
			st.metadata = true
		}
	}
	return "", 0
}

// lossTooSoon is one moment decode declared prefill lost sooner than its
// heartbeats allow, with one of the rooms it failed then.
type lossTooSoon struct {
	head string
	at   time.Duration
	room contract.RoomRecord
}

// lossesTooSoon judges each moment decode declared prefill lost (the
// Failed statuses it wrote then for the rooms paired with it,
// contract.PeerLostDetail) while a stop or kill of prefill's process was
// near: HeartbeatFailures misses in a row need prefill unreachable the
// whole time they took. A miss is a GET to /health unanswered for one
// heartbeat interval I; the next follows a tick later. A stopped process
// answers once it continues, so each GET waits I out: HeartbeatFailures
// intervals of stop before the loss. A killed one refuses at once, so its
// misses are a tick apart: HeartbeatFailures-1 intervals. A quarter
// interval is allowed at each end, and half at the start of a stop (a GET
// sent just before it is answered late), and a killed process a
// DefaultFaultMargin to come back up. A loss with no process fault of
// prefill near it (load starving the heartbeat, a network fault), or with
// one of decode's own (its ticks bunch up when it continues), is not
// judged: what a miss needs there is not known.
func (v *View) lossesTooSoon(decode map[uint64]contract.RoomRecord, cfg contract.EngineConfig, ev map[string]int64) []lossTooSoon {
	iv := cfg.HeartbeatInterval
	if iv <= 0 {
		return nil
	}
	base := v.Run.BaseWall
	// One loss fails every paired room in one step, at one time.
	losses := map[time.Duration]contract.RoomRecord{}
	for _, id := range sortedRooms(decode) {
		r := decode[id]
		for _, e := range r.Events {
			if _, why, ok := strings.Cut(e.Detail, ": "); ok && e.Kind == contract.RoomEventStatus && e.Side == contract.SideDecode &&
				e.State == contract.StateFailed && strings.HasPrefix(why, contract.PeerLostDetail) {
				if _, seen := losses[e.At.Sub(base)]; !seen {
					losses[e.At.Sub(base)] = r
				}
			}
		}
	}
	type span struct {
		from, to time.Duration
		kill     bool
		name     string
	}
	var prefill []span
	decodeFault := func(from, to time.Duration) bool {
		for _, w := range v.Faults {
			if w.Applied && w.Layer == faults.LayerProcess && faults.ReadName(w.Fault).Role == contract.SideDecode && w.Start <= to && (w.End == 0 || w.End >= from) {
				return true
			}
		}
		return false
	}
	for _, w := range v.Faults {
		if !w.Applied || w.Layer != faults.LayerProcess || faults.ReadName(w.Fault).Role != contract.SidePrefill {
			continue
		}
		s := span{from: w.Start, to: w.End, kill: faults.ReadName(w.Fault).Can(faults.EndsProcess), name: w.Fault}
		if s.to == 0 {
			s.to = time.Duration(1<<63 - 1)
		} else if s.kill {
			s.to += DefaultFaultMargin
		}
		prefill = append(prefill, s)
	}
	var out []lossTooSoon
	times := make([]time.Duration, 0, len(losses))
	for t := range losses {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	for _, t := range times {
		near, killed := false, false
		for _, s := range prefill {
			if s.from <= t && s.to >= t-contract.PeerLossDetection(cfg)-DefaultFaultMargin {
				near = true
			}
			if s.kill && s.from <= t && s.to >= t-iv/2 {
				killed = true
			}
		}
		if !near || decodeFault(t-contract.PeerLossDetection(cfg)-DefaultFaultMargin, t) {
			continue
		}
		ev["peer_losses_judged"]++
		need := time.Duration(contract.HeartbeatFailures)*iv - iv/2
		if killed {
			need = time.Duration(contract.HeartbeatFailures-1)*iv - iv/4
		}
		from, to := t-need-iv/4, t-iv/4
		// Walk the union of prefill's outages forward from `from`.
		reach := from
		for moved := true; moved && reach < to; {
			moved = false
			for _, s := range prefill {
				if s.from <= reach && s.to > reach {
					reach, moved = s.to, true
				}
			}
		}
		if reach >= to {
			continue
		}
		r := losses[t]
		out = append(out, lossTooSoon{at: t, room: r, head: fmt.Sprintf(
			"decode declared prefill lost at %v (room %d failed with it), but prefill's process was not unreachable throughout %v to %v, as %d heartbeat misses in a row (every %v, each waiting one) need: reachable again at %v",
			t.Round(time.Millisecond), r.Room, from.Round(time.Millisecond), to.Round(time.Millisecond), contract.HeartbeatFailures, iv, reach.Round(time.Millisecond))})
	}
	return out
}

// decodeUpFrom is when, from t on, decode's process has been running for
// span without a stop or kill of its own (its heartbeats only run while it
// does); false when it is down from then to the end of the run.
func (v *View) decodeUpFrom(t, span time.Duration) (time.Duration, bool) {
	for moved := true; moved; {
		moved = false
		for _, d := range v.Faults {
			if !d.Applied || d.Layer != faults.LayerProcess || faults.ReadName(d.Fault).Role != contract.SideDecode {
				continue
			}
			if d.Start <= t+span && (d.End == 0 || d.End > t) {
				if d.End == 0 {
					return 0, false
				}
				t, moved = d.End, true
			}
		}
	}
	return t, true
}

// peerBackstopExplains reports whether decode's waiting deadline f is
// explained by prefill's bootstrap deadline p, itself explained, firing
// on the same room before it, and decode's TransferInfo (own, decode's
// record) going out only after prefill's memory of that failure
// (contract.FailureMemory) had lapsed. Prefill's bootstrap deadline fires
// only while its room waits for decode's TransferInfo, so that came after
// prefill had ended the room: within the memory prefill answers it Failed
// at once (a KV pool too full to give decode its pages within prefill's
// deadline), after it decode waits out its own deadline, as SGLang does
// (the decode-side bootstrap timeout, #30769, is not merged).
func peerBackstopExplains(f, p firing, own contract.RoomRecord, cfg contract.EngineConfig) bool {
	if f.b.Name != contract.BackstopWaiting || p.b.Name != contract.BackstopBootstrap || !p.at.Before(f.at) {
		return false
	}
	for _, e := range own.Events {
		if e.Kind == contract.RoomEventMetadataSent && e.At.Sub(p.at) > contract.FailureMemory(cfg) {
			return true
		}
	}
	return false
}

// failureNotAnswered says why decode's waiting deadline firing is
// unexplained when a prefill rank had failed the room before decode's
// TransferInfo could reach it (its request aborted or past its bootstrap
// deadline, no TransferInfo held) and cleared it, decode then sent its
// TransferInfo within prefill's failure memory (contract.FailureMemory,
// less DefaultFaultMargin), and prefill neither answered it with a failure
// notice nor took it: the fixed engine answers such a TransferInfo Failed
// at once. Only a fault that can lose or hold back the TransferInfo or
// the answer (answerFaultDuring) from its sending to the firing excuses
// it. "" when that is not the case.
func (v *View) failureNotAnswered(f firing, own, peer contract.RoomRecord, hasPeer bool) string {
	sent := waitedFor(f, own, hasPeer)
	if sent.IsZero() {
		return ""
	}
	cfg, _, err := v.Run.Engine.Resolve()
	if err != nil {
		return ""
	}
	memory := contract.FailureMemory(cfg) - DefaultFaultMargin
	type rankState struct {
		metadata, cleared, told bool
		failedAt                time.Time
	}
	ranks := map[int]*rankState{}
	for _, e := range sortedEvents(peer.Events) {
		if e.Side != contract.SidePrefill || e.At.After(f.at) {
			continue
		}
		if createsRequest(e) && e.At.Before(sent) {
			ranks = map[int]*rankState{} // a request for the room: its own life
			continue
		}
		st := rankEntry(ranks, e.Rank)
		switch e.Kind {
		case contract.RoomEventStatus:
			if e.State == contract.StateFailed && st.failedAt.IsZero() && !st.metadata {
				st.failedAt = e.At
			}
		case contract.RoomEventClear:
			st.cleared = st.cleared || !st.failedAt.IsZero() && e.At.Before(sent)
		case contract.RoomEventFailNotice, contract.RoomEventFailNoticeDeferred:
			st.told = true
		case contract.RoomEventMetadata:
			st.metadata = true
		}
	}
	base := v.Run.BaseWall
	return unansweredUnlessFault(v, f, sent, ranks, func(rank int, st *rankState) string {
		if !st.cleared || st.told || st.metadata || sent.Sub(st.failedAt) >= memory {
			return ""
		}
		return fmt.Sprintf("prefill rank %d had failed the room at %v, before decode's TransferInfo (sent at %v, within prefill's failure memory), and never answered it Failed",
			rank, st.failedAt.Sub(base).Round(time.Millisecond), sent.Sub(base).Round(time.Millisecond))
	})
}

// laterFailureNotAnswered says why decode's waiting deadline firing is
// unexplained when a prefill rank failed and cleared the room's request
// after decode sent the TransferInfo it waits on, at least a race window
// before the firing, neither holding that TransferInfo then nor told to
// abort the room, and recorded no failure notice since: the fixed engine
// tells decode either way, when it clears a room it holds the
// TransferInfo of, or when that TransferInfo arrives later (a request
// failed at once on a tombstone, a bootstrap deadline). Only a fault that
// can lose or hold back the TransferInfo or the answer (answerFaultDuring)
// excuses it. "" when that is not the case.
func (v *View) laterFailureNotAnswered(f firing, own, peer contract.RoomRecord, hasPeer bool) string {
	sent := waitedFor(f, own, hasPeer)
	if sent.IsZero() {
		return ""
	}
	type rankState struct {
		failed, metadata, aborted, told bool
		clearedAt                       time.Time
	}
	ranks := map[int]*rankState{}
	for _, e := range sortedEvents(peer.Events) {
		if e.Side != contract.SidePrefill || e.At.Before(sent) || e.At.After(f.at) {
			continue
		}
		st := rankEntry(ranks, e.Rank)
		switch e.Kind {
		case contract.RoomEventStatus:
			st.failed = e.State == contract.StateFailed
			// Past Bootstrapping, the rank had its TransferInfo.
			st.metadata = st.metadata || pollOrder(e.State) > pollOrder(contract.StateBootstrapping)
		case contract.RoomEventMetadata:
			st.metadata = true
		case contract.RoomEventAbortReceived, contract.RoomEventAbortTombstone:
			st.aborted = true
		case contract.RoomEventFailNotice, contract.RoomEventFailNoticeDeferred:
			st.told = true
		case contract.RoomEventClear:
			if st.clearedAt.IsZero() && st.failed && !st.metadata && !st.aborted {
				st.clearedAt = e.At
			}
		}
	}
	for _, st := range ranks {
		if st.told {
			// One rank's notice fails the room on decode: whether it
			// came in time is failNoticeSent's to judge.
			return ""
		}
	}
	base := v.Run.BaseWall
	return unansweredUnlessFault(v, f, sent, ranks, func(rank int, st *rankState) string {
		if st.clearedAt.IsZero() || f.at.Sub(st.clearedAt) < DefaultRaceWindow {
			return ""
		}
		return fmt.Sprintf("prefill rank %d failed the room at %v, after decode's TransferInfo (sent at %v), and never answered it Failed",
			rank, st.clearedAt.Sub(base).Round(time.Millisecond), sent.Sub(base).Round(time.Millisecond))
	})
}

// unansweredUnlessFault is why's verdict on the first rank, in rank
// order, it judges unanswered (why says so, "" otherwise), unless a
// fault that can lose decode's TransferInfo or prefill's answer
// (answerFaultDuring) overlapped its sending at sent and the firing f.
func unansweredUnlessFault[T any](v *View, f firing, sent time.Time, ranks map[int]*T, why func(rank int, st *T) string) string {
	for _, rank := range slices.Sorted(maps.Keys(ranks)) {
		msg := why(rank, ranks[rank])
		if msg == "" {
			continue
		}
		if v.answerFaultDuring(sent.Sub(v.Run.BaseWall), f.at.Sub(v.Run.BaseWall)) {
			return ""
		}
		return msg
	}
	return ""
}

// waitedFor is, for decode's waiting deadline on a room prefill has a
// record of, when decode sent the TransferInfo it was waiting on; zero
// for any other firing.
func waitedFor(f firing, own contract.RoomRecord, hasPeer bool) time.Time {
	if f.b.Name != contract.BackstopWaiting || !hasPeer {
		return time.Time{}
	}
	return metadataSentBefore(own, f.at)
}

// rankEntry is m's entry for rank, made on first use.
func rankEntry[T any](m map[int]*T, rank int) *T {
	st := m[rank]
	if st == nil {
		st = new(T)
		m[rank] = st
	}
	return st
}

// metadataSentBefore is when decode last sent its TransferInfo for the
// room at or before t (the one it waits on at t), or zero.
func metadataSentBefore(own contract.RoomRecord, t time.Time) time.Time {
	var sent time.Time
	for _, e := range own.Events {
		if e.Side == contract.SideDecode && e.Kind == contract.RoomEventMetadataSent && !e.At.After(t) && e.At.After(sent) {
			sent = e.At
		}
	}
	return sent
}

// answerFaultDuring reports whether a fault that can lose or hold back
// decode's TransferInfo or prefill's answer to it overlapped [from, to]:
// one on a control or notify link (or a network or protocol fault whose
// link its name does not give), a process fault, or a stall of prefill's
// bootstrap loop or decode's scheduler. Paused transfer workers, KV link
// and client faults cannot.
func (v *View) answerFaultDuring(from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		n := faults.ReadName(f.Fault)
		switch f.Layer {
		case faults.LayerNetwork, faults.LayerProtocol:
			if n.Link == "" || contract.IsControlLink(n.Link) || contract.IsNotifyLink(n.Link) {
				return true
			}
		case faults.LayerProcess, faults.LayerEngine:
			if n.Can(faults.HoldsMetadata) {
				return true
			}
		}
	}
	return false
}

// unsentFailNotice says why decode's waiting deadline firing is
// unexplained when prefill had cleared the room as Failed, holding
// decode's TransferInfo (so knowing where to tell it), more than
// DefaultRaceWindow before, and recorded no failure notice to decode: the
// fixed engine sends one when it clears such a room (a fault may lose it
// on the way, but none can keep prefill from sending). A room prefill
// failed but had not cleared yet (its scheduler busy with a forward) is
// not judged here. "" when that is not the case.
func unsentFailNotice(f firing, own, peer contract.RoomRecord, hasPeer bool) string {
	if f.b.Name != contract.BackstopWaiting || !hasPeer {
		return ""
	}
	// Only what prefill did after decode sent the TransferInfo it waits
	// on: a room's records join every request in it, and an earlier
	// request's TransferInfo, cleared with it (a client retrying in its
	// room), is not this one's.
	sent := metadataSentBefore(own, f.at)
	// Per rank: at TP > 1 a rank that never got its TransferInfo cannot
	// tell decode anything, whatever another rank held.
	metadata := map[int]bool{}
	last := map[int]string{}
	for _, e := range sortedEvents(peer.Events) {
		if e.At.After(f.at) {
			break
		}
		if e.At.Before(sent) {
			continue
		}
		switch e.Kind {
		case contract.RoomEventMetadata:
			metadata[e.Rank] = true
		case contract.RoomEventFailNotice, contract.RoomEventFailNoticeDeferred:
			return "" // sent (or held for a write): lost on the way, or late; judged as any backstop
		case contract.RoomEventStatus:
			last[e.Rank] = e.State
		case contract.RoomEventClear:
			if last[e.Rank] == contract.StateFailed && metadata[e.Rank] && f.at.Sub(e.At) >= DefaultRaceWindow {
				return fmt.Sprintf("prefill cleared the room as Failed %v before, holding decode's TransferInfo, and sent it no failure notice",
					f.at.Sub(e.At).Round(time.Millisecond))
			}
			// Clearing drops the TransferInfo with the request: one that
			// came before belonged to an earlier request in the room (a
			// client retrying in it), not to what decode waits for now.
			metadata[e.Rank] = false
		}
	}
	return ""
}

// killOf reports whether fault record f kills role's process
// (faults.EndsProcess).
func killOf(f schedule.Record, role string) bool {
	n := faults.ReadName(f.Fault)
	return n.Role == role && n.Can(faults.EndsProcess)
}
