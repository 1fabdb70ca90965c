// Package scenario turns a harness scenario (a preset of suites/scenarios
// or a scenario file) into a sim.Config, so presets run in the simulator
// as they are. It is the one place the simulator meets the harness and the
// agents' options; package sim itself imports neither.
package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pdchaos/pdchaos/faults/catalog"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/sim"
)

// Skipped is a part of a scenario the simulator cannot carry out (a fault
// entry, or the open-loop load with Index -1), with why.
type Skipped struct {
	Index  int
	Kind   string
	Reason string
}

// String reads "faults[2] sigkill: not simulated".
func (s Skipped) String() string {
	if s.Index < 0 {
		return fmt.Sprintf("%s: %s", s.Kind, s.Reason)
	}
	return fmt.Sprintf("faults[%d] %s: %s", s.Index, s.Kind, s.Reason)
}

// simulatedLink reports whether link is one the simulator carries as
// connections: decode's control messages, prefill's notices and the KV
// writes. The router's hops and the bootstrap server's HTTP are calls in
// the simulator, not streams a network fault could throttle or cut.
func simulatedLink(link string) bool {
	for _, p := range []string{"control/", "notify/", "kv/"} {
		if strings.HasPrefix(link, p) {
			return true
		}
	}
	return false
}

// Config converts sc. Fault kinds the simulator does not model are left
// out and listed in the second result, never dropped silently.
func Config(sc *harness.Scenario) (sim.Config, []Skipped, error) {
	o, err := sc.AgentOptions()
	if err != nil {
		return sim.Config{}, nil, fmt.Errorf("scenario %s: agents: %w", sc.Name, err)
	}
	o = o.WithDefaults()
	cfg := sim.Config{Name: sc.Name, Seed: sc.Seed, Duration: sc.Duration, Engine: sc.Engine,
		Clients: sim.Clients{Agents: o.Agents, StartSpread: o.StartSpread, WarmUp: o.WarmUp, SystemPromptWords: o.SystemPromptWords,
			UserPromptWords: o.UserPromptWords, ToolOutputWords: o.ToolOutputWords, MaxContextWords: o.MaxContextWords,
			TurnsPerSession: o.TurnsPerSession, MaxTokens: o.MaxTokens, ThinkTime: o.ThinkTime, SubRequestRate: o.SubRequestRate,
			MaxSubRequests: o.MaxSubRequests, CancelQueuedRate: o.CancelQueuedRate, CancelQueuedDelay: o.CancelQueuedDelay, RetrySameRidRate: o.RetrySameRidRate, RetrySameRoomRate: o.RetrySameRoomRate,
			RetryDelay: o.RetryDelay, AbortRequestRate: o.AbortRequestRate,
			CancelDecodeRate: o.CancelDecodeRate, DeadlineRate: o.DeadlineRate, Deadline: o.Deadline, HangTimeout: o.HangTimeout,
			KillEvery: o.KillEvery, RestartDelay: o.RestartDelay, KillAllAt: o.KillAllAt, KillAllEvery: o.KillAllEvery},
		Checks: sim.Checks{DrainDeadline: sc.Checks.DrainDeadline, Probes: sc.Checks.Probes, ProbeDeadline: sc.Checks.ProbeDeadline,
			MinRequests: sc.Checks.MinRequests, MinCancels: sc.Checks.MinCancels}}
	modelled := map[string]bool{}
	for _, k := range sim.Modelled() {
		modelled[k] = true
	}
	var skipped []Skipped
	if sc.OpenLoop != nil {
		// Index -1: not a fault entry, the scenario's open-loop load.
		skipped = append(skipped, Skipped{-1, "open_loop", "open-loop (vegeta) load is not simulated; the agents are"})
	}
	for i, fs := range sc.Faults {
		k, ok := catalog.Lookup(fs.Kind)
		if !ok {
			return sim.Config{}, nil, fmt.Errorf("scenario %s: faults[%d]: unknown kind %q", sc.Name, i, fs.Kind)
		}
		v, err := k.Parse(fs.Params)
		if err != nil {
			return sim.Config{}, nil, fmt.Errorf("scenario %s: faults[%d]: %w", sc.Name, i, err)
		}
		f := sim.Fault{Kind: fs.Kind, AtMin: fs.At.Min, AtMax: fs.At.Max, ForMin: fs.For.Min, ForMax: fs.For.Max, Every: fs.Every, Count: fs.Count,
			Link: v.String("link"), Kinds: v.Strings("kinds"), Min: v.Duration("min"), Max: v.Duration("max"), Delay: v.Duration("delay"),
			KeepOrder: v.Bool("keep_order"), MaxHold: v.Duration("max_hold"), AfterMessages: v.Int("after_messages"), Limit: v.Int("limit"),
			Role: v.String("role"), Rank: -1, Worker: -1,
			DropPct: v.Int("drop_pct"), ReorderPct: v.Int("reorder_pct"), DelayPct: v.Int("delay_pct"), AfterChunks: v.Int("after_chunks"),
			MinDelay: v.Duration("min_delay"), MaxDelay: v.Duration("max_delay"), Mode: v.String("mode"), Restart: v.Bool("restart"),
			RateKB: v.Int("rate"), Bytes: v.Int("bytes"), AverageSize: v.Int("average_size"), Stream: v.String("stream")}
		if _, has := k.Param("rank"); has {
			f.Rank = v.Int("rank")
		}
		if _, has := k.Param("worker"); has {
			f.Worker = v.Int("worker")
		}
		switch {
		case !modelled[fs.Kind]:
			skipped = append(skipped, Skipped{i, fs.Kind, "not simulated (simulated kinds: sim.Modelled)"})
			continue
		case (fs.Kind == "pause-transfer-workers" || fs.Kind == "pause-transfer-writes") && f.Role == "decode":
			skipped = append(skipped, Skipped{i, fs.Kind, "decode has no transfer workers to pause"})
			continue
		case slices.Contains([]string{"reset-peer", "link-down", "timeout", "bandwidth", "slicer", "limit-data"}, fs.Kind) && !simulatedLink(f.Link):
			skipped = append(skipped, Skipped{i, fs.Kind, "only the control/N, notify/N and kv/N links are simulated connections"})
			continue
		case fs.Kind == "kv-chunks" && !strings.HasPrefix(f.Link, "kv/"):
			skipped = append(skipped, Skipped{i, fs.Kind, "kv-chunks acts on kv/N links only"})
			continue
		case fs.Kind == "latency" && f.Link == "bootstrap":
			skipped = append(skipped, Skipped{i, fs.Kind, "the simulator has no bootstrap HTTP hop"})
			continue
		case fs.Kind == "sigstop" && f.Role == "router":
			skipped = append(skipped, Skipped{i, fs.Kind, "the simulated router cannot be stopped"})
			continue
		case fs.Kind == "sigkill" && f.Role != "decode" && f.Role != "prefill":
			skipped = append(skipped, Skipped{i, fs.Kind, "only prefill's and decode's processes are killed in the simulator"})
			continue
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	return cfg, skipped, cfg.Validate()
}
