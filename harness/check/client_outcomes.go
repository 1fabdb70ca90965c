package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
)

// outcomeCounts counts outcomes by kind; cancels exclude the swarm's own stop.
func outcomeCounts(os []outcome.Outcome) map[string]int64 {
	ev := map[string]int64{"requests": int64(len(os))}
	for _, o := range os {
		ev[string(o.Kind)]++
		if o.Kind == outcome.KindCancelled && o.Reason != outcome.ReasonStop {
			ev["cancels"]++
		}
	}
	return ev
}

// checkClientOutcomes: no hung request; every error carries a status or
// message; on pdchaos's own engine no server error without a cause
// (unexplainedErrors); and, where the router is pdchaos's own (the log records its
// engine config), every error reached the client as an answer the API
// defines (an error status with an OpenAI error body, or an error event),
// not as a cut stream, a reset, or a body that is no error, unless a fault
// on the client's link or on the router was active at the time. A router
// that stays up always answers: its upstreams failing is what the error
// body and event are for. An external router's broken answers are counted
// (broken_answers), not judged: how a real gateway reports an upstream's
// failure is its own.
func checkClientOutcomes(v *View) CheckResult {
	ev := outcomeCounts(v.Outcomes)
	ev["broken_answers"], ev["broken_answers_faulted"] = 0, 0
	ownRouter := v.Run.Engine != nil
	var bad []string
	for _, o := range v.Outcomes {
		switch {
		case o.Kind == outcome.KindHung:
			bad = append(bad, fmt.Sprintf("hung: agent %d turn %d room %d phase %s after %v", o.Agent, o.Turn, o.Room, o.Phase, o.End-o.Start))
		case o.Kind == outcome.KindError && o.Status == 0 && o.Message == "":
			bad = append(bad, fmt.Sprintf("malformed error: agent %d turn %d room %d", o.Agent, o.Turn, o.Room))
		case o.Kind == outcome.KindError && o.Failure != "" && !o.Failure.WellFormed():
			if v.clientPathFaultDuring(o.Start-DefaultFaultMargin, o.End+DefaultFaultMargin) {
				ev["broken_answers_faulted"]++
				continue
			}
			ev["broken_answers"]++
			if ownRouter {
				bad = append(bad, fmt.Sprintf("broken answer (%s) with no fault on the client's link or the router: %s %d turn %d room %d: %s",
					o.Failure, o.Source, o.Agent, o.Turn, o.Room, o.Message))
			}
		}
	}
	bad = append(bad, v.unexplainedErrors(ev)...)
	bad = append(bad, v.refusedRetries(ev)...)
	switch {
	case len(v.Outcomes) == 0:
		return result(contract.CheckClientOutcomes, Inconclusive, ev, "no request outcome recorded")
	case len(bad) > 0:
		r := result(contract.CheckClientOutcomes, Fail, ev, "%d bad outcomes: %s", len(bad), joinLimit(bad, 3))
		r.Details = bad
		return r
	}
	if n := ev["broken_answers"]; n > 0 {
		return result(contract.CheckClientOutcomes, Pass, ev, "%d requests, none hung; %d errors reached the client as broken answers (cut, reset or not an error body), counted not judged on an external router", len(v.Outcomes), n)
	}
	return result(contract.CheckClientOutcomes, Pass, ev, "%d requests, none hung, errors well-formed", len(v.Outcomes))
}

// unexplainedErrors lists the requests of a run on pdchaos's own engine
// (room records kept, no regression on) that failed with a server error
// (not a 4xx refusal of what the client sent) when nothing explains it: no
// fault active during the request, no backstop fired on its room on
// either side (timeouts-explained judges that one), and no earlier request
// of the client's in the same room (a retry meets what its predecessor
// left). With no fault the engine has no reason to fail a request: a
// request failed for nothing is a bug as sure as a wedge is, and checks
// that only ask whether rooms end never see it.
func (v *View) unexplainedErrors(ev map[string]int64) []string {
	ev["server_errors"], ev["server_errors_explained"] = 0, 0
	if v.Run.Engine == nil || len(v.Run.Engine.Regressions) > 0 {
		return nil
	}
	recs := roomsByRole(v)
	if len(recs) == 0 {
		return nil // no room records: an external target, or none kept
	}
	backstopped := map[uint64]bool{}
	for _, f := range firings(recs) {
		backstopped[f.room] = true
	}
	var bad []string
	for _, o := range v.Outcomes {
		if o.Kind != outcome.KindError || o.Status >= 400 && o.Status < 500 || !o.HasRoom {
			continue
		}
		ev["server_errors"]++
		_, onPrefill := recs[contract.SidePrefill][o.Room]
		_, onDecode := recs[contract.SideDecode][o.Room]
		switch {
		case !onPrefill && !onDecode, // nothing to judge it by
			v.faultDuring(o.Start-DefaultFaultMargin, o.End+DefaultFaultMargin),
			backstopped[o.Room],
			v.Sent[o.Room] < o.Start: // an earlier request in the room
			ev["server_errors_explained"]++
			continue
		}
		bad = append(bad, fmt.Sprintf("error with no fault, no backstop and no earlier request in its room to explain it: %s %d turn %d room %d, status %d: %s",
			o.Source, o.Agent, o.Turn, o.Room, o.Status, o.Message))
	}
	return bad
}

// clientPathFaultDuring reports whether an applied fault on the
// client-router link or on the router itself overlapped [from, to]: the
// only faults that may cut a client's answer. A fault names its link or
// role first in its parentheses (network, protocol and process faults
// alike: "reset_peer(client-router,…)", "sigstop(router)").
func (v *View) clientPathFaultDuring(from, to time.Duration) bool {
	for _, f := range v.Faults {
		if !f.Applied || f.Start > to || (f.End != 0 && f.End < from) {
			continue
		}
		if t := faultTarget(f.Fault); t == contract.LinkClientRouter || t == contract.SideRouter {
			return true
		}
	}
	return false
}

// faultTarget is the link or role a fault's name gives first (live:
// "reset_peer(client-router,…)", "sigstop(router)"; simulated:
// "latency@client-router"), "" when it gives none.
func faultTarget(name string) string {
	n := faults.ReadName(name)
	if n.Link != "" {
		return n.Link
	}
	return n.Role
}

// refusedRetries lists the retries (a second send with the same rid) that
// the bundled engine refused as a duplicate rid when neither side still
// held the first send: both had released its room before the retry was
// sent. A side refuses a rid it holds, as SGLang's tokenizer does; a rid
// it released is free again, and a retry refused then failed for nothing
// (a side that never forgets a rid turns every retry into an error, and
// the rooms all end, so no other check sees it). A side with no record of
// the first room, or whose record does not name the first request, is
// taken to hold it.
func (v *View) refusedRetries(ev map[string]int64) []string {
	ev["retries_refused_duplicate"], ev["retries_refused_duplicate_held"] = 0, 0
	if v.Run.Engine == nil || len(v.Run.Engine.Regressions) > 0 || v.Run.BaseWall.IsZero() {
		return nil
	}
	recs := roomsByRole(v)
	if len(recs) == 0 {
		return nil
	}
	first := map[string]outcome.Outcome{}
	for _, o := range v.Outcomes {
		if o.Rid != "" && !o.Retry && o.HasRoom {
			first[o.Rid] = o
		}
	}
	var bad []string
	for _, o := range v.Outcomes {
		if !o.Retry || o.Kind != outcome.KindError || o.Status < 400 || o.Status >= 500 || !strings.Contains(o.Message, contract.DuplicateRidRefusal) {
			continue
		}
		ev["retries_refused_duplicate"]++
		f, ok := first[o.Rid]
		sent := v.Run.BaseWall.Add(o.Start)
		var released []string
		for _, role := range []string{contract.SidePrefill, contract.SideDecode} {
			at, ok2 := ridReleased(recs[role][f.Room], o.Rid)
			if !ok || !ok2 || !at.Before(sent) {
				break
			}
			released = append(released, fmt.Sprintf("%s released it at %v", role, at.Sub(v.Run.BaseWall).Round(time.Millisecond)))
		}
		if len(released) < 2 {
			ev["retries_refused_duplicate_held"]++
			continue
		}
		bad = append(bad, fmt.Sprintf("retry refused as a duplicate rid that neither side held: %s %d turn %d rid %s room %d, sent at %v, first send's room %d: %s",
			o.Source, o.Agent, o.Turn, o.Rid, o.Room, o.Start.Round(time.Millisecond), f.Room, strings.Join(released, ", ")))
	}
	return bad
}

// ridReleased is when a side's record of a room opened for rid shows the
// request released: its first clear. False when the record does not name
// rid or was never cleared.
func ridReleased(r contract.RoomRecord, rid string) (time.Time, bool) {
	if got, named := openedFor(r); !named || got != rid {
		return time.Time{}, false
	}
	for _, e := range r.Events {
		if e.Kind == contract.RoomEventClear {
			return e.At, true
		}
	}
	return time.Time{}, false
}
