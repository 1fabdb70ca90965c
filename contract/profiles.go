package contract

import (
	"fmt"
	"slices"
	"strings"
)

// Profile names: an upstream build whose default settings still have some
// of the races in Catalogue().
const (
	ProfileSGLangNIXL     = "sglang-nixl"
	ProfileSGLangMooncake = "sglang-mooncake"
)

// Profile is one SGLang build as pdchaos can reproduce it: the wire dialect
// it speaks and the regressions its default settings still have, according
// to shared/reference/sglang-pd.md and sglang-wire.md (cited by section as
// "pd §…" and "wire §…"). It lets a user see which presets fail on the
// defaults they run (`pdchaos run PRESET --profile NAME`). This table is
// the one source: flags, scenario validation and the table in
// docs/sglang.md are generated from it or checked against it.
type Profile struct {
	// Name switches the profile on (--profile NAME, scenario engine.profile).
	Name string
	// Wire is the dialect the build speaks; it becomes the engine's wire.
	Wire Wire
	// Build says which upstream build and settings the profile stands for.
	Build string
	// On are the regressions switched on, each with the reference's reason
	// that the default build still has the race.
	On []ProfileReason
	// Off are the rest of the catalogue, each with why that build does not
	// have it (the upstream fix). On and Off together cover Catalogue()
	// exactly once, so a new regression forces a decision here.
	Off []ProfileReason
	// Unmodelled are races the reference names for this default build that
	// the engine has no regression for: said here rather than imitated by a
	// regression that does something else.
	Unmodelled []string
}

// ProfileReason is a regression and, in one line, the reference's reason
// for switching it on or leaving it off in a profile.
type ProfileReason struct {
	// Regression is a name from Catalogue().
	Regression string
	// Reason cites the reference (pd §…, wire §…, SGLang PR numbers).
	Reason string
}

// Profiles lists every profile in a fixed order.
func Profiles() []Profile {
	rankDesync := ProfileReason{RankDesync, "decode prealloc/transfer polls are still sized per rank when a rank-local abort makes the queues differ " +
		"(#36928, #37909 open; pd §6.6b,c); backend-independent, shows only with tp > 1"}
	deadlines := "SGLang's own deadlines are 300 s (bootstrap, waiting) and prefill has no inflight deadline (pd §4, wire §3 env flags); " +
		"the profile keeps the scenario's deadlines, so a fixed path still heals within the run"
	return []Profile{
		{Name: ProfileSGLangNIXL, Wire: WireNIXL,
			Build: "SGLang main@2026, --disaggregation-transfer-backend nixl (post-#30352, pre-#35360), default env: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE off",
			On: []ProfileReason{
				{AbortBeforeStatus, "an ABORT for a room prefill has not created yet is still ignored as \"already completed or unknown\" (pd §3.3, §6.1a); " +
					"the only backstop is the 300 s bootstrap timeout (#34692), past any preset's drain deadline. The engine's regression also " +
					"max-merges over Failed (pd §6.1b), which NIXL's sticky Failed (#30352) fixed, so it slightly over-states NIXL"},
				{UnknownRoomWaiting, "NIXL's check_status returns WaitingForInput for an absent room and the worker skips only == Failed, " +
					"so a sender polling a cleared room waits forever with no inflight deadline (pd §2, §4, §6.3; #31589 closed unmerged)"},
				rankDesync,
				{FreeBeforeAck, "NIXL sends no ABORT_ACK unless deferred release is set (#35360, env-gated, default off), so decode frees an " +
					"aborted room's pages at once while RDMA writes may be in flight (pd §3.3, §6.5; wire §3 ABORT_ACK, §4)"},
			},
			Off: []ProfileReason{
				{StatusResurrection, "NIXL's Failed is sticky until clear (#30352, #30685; pd §2, wire §4)"},
				{BootstrapThreadDeath, "the bootstrap thread handles ABORT before the guard check since #30352 (wire §3 NIXL)"},
				{DecodeAbortLeak, "decode abort leaves the prealloc/transfer queues and sets FINISH_ABORT (#25561, #9817, #28022; pd §6.5)"},
			},
			Unmodelled: []string{
				"any other unguarded or malformed frame still trips the guard assert and kills the bootstrap thread (wire §3 NIXL, pd §6.4); " +
					"the engine's bootstrap-thread-death also dies on ABORT, which NIXL no longer does, so it stays off",
				"a late non-Failed write re-inserts a cleared room (leak, pd §6.2); the engine ties re-insertion to status-resurrection, " +
					"which also un-sticks Failed, so it stays off",
				"the decode prealloc queue and the /query_dp_ranks lookup have no deadline (pd §4 decode 2)",
				"before #36612 prefill never told decode of a failure, which waited 300 s (pd §3.3); the engine always sends the status notice",
				deadlines,
			}},
		{Name: ProfileSGLangMooncake, Wire: WireMooncake,
			Build: "SGLang main@2026, --disaggregation-transfer-backend mooncake (mooncake/conn.py newest read), default env: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE off",
			On: []ProfileReason{
				{AbortBeforeStatus, "Failed is not sticky in the common/Mooncake update_status: metadata then ABORT before the sender lets its " +
					"constructor max-merge Bootstrapping over Failed, and an ABORT for an absent room is ignored (pd §2, §6.1a,b); " +
					"only the 300 s bootstrap timeout ends it"},
				{StatusResurrection, "the common/Mooncake update_status stores max(current, s) over Failed, so a transfer worker's later " +
					"Transferring/Success write revives an aborted room (pd §2, §6.2; wire §4); the conclude_state latch helps only once Failed was polled"},
				rankDesync,
				{FreeBeforeAck, "Mooncake sends a 2-frame ABORT_ACK that decode only logs; pages are freed at once unless deferred release " +
					"is set (pd §3.3; wire §3 ABORT_ACK, §4)"},
			},
			Off: []ProfileReason{
				{UnknownRoomWaiting, "Mooncake's check_status guards with `room not in request_status` and the worker skips absent rooms (pd §2, §6.3)"},
				{BootstrapThreadDeath, "Mooncake has no guard frame, so ABORT (#27372) is parsed like any other message (pd §3.3, wire §3 Mooncake)"},
				{DecodeAbortLeak, "decode abort leaves the prealloc/transfer queues and sets FINISH_ABORT (#25561, #9817, #28022; pd §6.5)"},
			},
			Unmodelled: []string{
				"a malformed frame still kills the bootstrap thread (unguarded int() parsing), and a transfer-worker exception kills that " +
					"worker, stalling every room hashed to its queue (pd §1, §6.4; wire §3 fragility); the engine has no regression for either",
				"after prefill's bootstrap timeout, decode's late metadata leaves an orphan request_status/transfer_infos entry that nobody clears (pd §6.1d)",
				"the decode prealloc queue and the /query_dp_ranks lookup have no deadline (pd §4 decode 2)",
				deadlines,
			}},
	}
}

// ProfileNames returns every profile name in table order.
func ProfileNames() []string {
	var out []string
	for _, p := range Profiles() {
		out = append(out, p.Name)
	}
	return out
}

// LookupProfile returns a profile by name; an unknown name is an error
// listing the valid ones.
func LookupProfile(name string) (Profile, error) {
	name = strings.TrimSpace(name)
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown profile %q (valid: %s)", name, strings.Join(ProfileNames(), ", "))
}

// Regressions returns the names the profile switches on, in catalogue order.
func (p Profile) Regressions() []string {
	var out []string
	for _, n := range RegressionNames() {
		if slices.ContainsFunc(p.On, func(r ProfileReason) bool { return r.Regression == n }) {
			out = append(out, n)
		}
	}
	return out
}

// WithProfile expands c.Profile into the settings it stands for: the
// profile's regressions merged with c.Regressions (the profile's first, in
// catalogue order, then the explicit ones it lacks) and its wire as c.Wire.
// An explicit wire that differs from the profile's is an error naming both,
// since one deployment speaks one dialect. Without a profile c is returned
// unchanged; expanding twice gives the same result, so a resolved scenario
// (repro.yaml) can be loaded again.
func (c EngineConfig) WithProfile() (EngineConfig, error) {
	if strings.TrimSpace(c.Profile) == "" {
		c.Profile = ""
		return c, nil
	}
	p, err := LookupProfile(c.Profile)
	if err != nil {
		return c, err
	}
	c.Profile = p.Name
	if w := Wire(strings.TrimSpace(string(c.Wire))); w != "" && w != p.Wire {
		return c, fmt.Errorf("profile %s speaks wire %s, but wire %s was given: drop one, or pick the profile of that wire", p.Name, p.Wire, w)
	}
	c.Wire = p.Wire
	merged := p.Regressions()
	for _, r := range c.Regressions {
		if r = strings.TrimSpace(r); r != "" && !slices.Contains(merged, r) {
			merged = append(merged, r)
		}
	}
	c.Regressions = merged
	return c, nil
}
