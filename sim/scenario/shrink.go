package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/sim"
)

// Size is how big a scenario is where shrinking counts: requests the
// simulated run made, fault entries and agents.
type Size struct {
	Requests, Faults, Agents int
	Duration                 time.Duration
}

// larger reports whether s is bigger than o in any dimension: a step that
// grows one (fewer agents that send more requests between them, say) is
// not a reduction, however it fails.
func (s Size) larger(o Size) bool {
	return s.Requests > o.Requests || s.Faults > o.Faults || s.Agents > o.Agents || s.Duration > o.Duration
}

func (s Size) String() string {
	return fmt.Sprintf("%d requests, %d fault entries, %d agents, %v", s.Requests, s.Faults, s.Agents, s.Duration)
}

// Shrunk is a shrinking's outcome: the minimal scenario that still fails
// checker on seed, and the sizes before and after.
type Shrunk struct {
	Scenario      *harness.Scenario
	Before, After Size
	// Tries counts simulated runs spent.
	Tries int
}

// Shrink reduces sc, greedily and deterministically, while checker still
// fails on seed: it drops fault entries, halves agents, duration, prompt
// and answer lengths and turns, and switches cancels, kills and
// sub-requests off, and lengthens the agents' think time, keeping each
// step only if the replay still fails the same checker and no dimension
// of the run (requests made, fault entries, agents, duration) grew. The agents preset is resolved into explicit options first
// (a preset field cannot be overridden to zero). The result is a scenario
// file `pdchaos sim` and `pdchaos run` accept, with Seed set to seed.
func Shrink(ctx context.Context, sc *harness.Scenario, seed uint64, checker string) (Shrunk, error) {
	cur := *sc
	o, err := cur.AgentOptions()
	if err != nil {
		return Shrunk{}, fmt.Errorf("shrink %s: agents: %w", sc.Name, err)
	}
	cur.Agents = harness.AgentsSpec{Options: o.WithDefaults()}
	cur.Faults = append([]harness.FaultSpec(nil), sc.Faults...)
	cur.Seed = seed
	out := Shrunk{}
	fails := func(c *harness.Scenario) (bool, Size) {
		out.Tries++
		cfg, _, err := Config(c)
		if err != nil {
			return false, Size{}
		}
		r, err := sim.Run(ctx, cfg, seed, sim.Options{})
		if err != nil {
			return false, Size{}
		}
		ck, _ := r.Checks.Get(checker)
		return ck.Status == "fail", Size{Requests: r.Requests, Faults: len(c.Faults), Agents: c.Agents.Options.Agents, Duration: c.Duration}
	}
	ok, size := fails(&cur)
	if !ok {
		return Shrunk{}, fmt.Errorf("shrink %s: seed %d does not fail %s", sc.Name, seed, checker)
	}
	out.Before = size
	for changed := true; changed; {
		changed = false
		for _, step := range steps(&cur) {
			if ctx.Err() != nil {
				return Shrunk{}, fmt.Errorf("shrink %s seed %d: stopped after %d runs: %w", sc.Name, seed, out.Tries, context.Cause(ctx))
			}
			next := cur
			next.Faults = append([]harness.FaultSpec(nil), cur.Faults...)
			next.Agents.Options.KillAllAt = append([]time.Duration(nil), cur.Agents.Options.KillAllAt...)
			if !step(&next) {
				continue
			}
			if next.Validate() != nil {
				continue
			}
			if ok, s := fails(&next); ok && !s.larger(size) {
				cur, size, changed = next, s, true
			}
		}
	}
	// The name stays: it is part of the random stream (sim hashes it with
	// the seed), so a renamed file would replay another run.
	cur.Description = fmt.Sprintf("minimal repro shrunk from %s: seed %d still fails %s (%s before, %s after)", sc.Name, seed, checker, out.Before, size)
	out.Scenario, out.After = &cur, size
	return out, nil
}

// steps are the candidate reductions of one pass; each reports whether it
// changed anything.
func steps(c *harness.Scenario) []func(*harness.Scenario) bool {
	var out []func(*harness.Scenario) bool
	for i := range c.Faults {
		out = append(out, func(s *harness.Scenario) bool {
			if i >= len(s.Faults) {
				return false
			}
			s.Faults = append(s.Faults[:i], s.Faults[i+1:]...)
			return true
		})
	}
	halve := func(get func(*harness.Scenario) *int, floor int) func(*harness.Scenario) bool {
		return func(s *harness.Scenario) bool {
			v := get(s)
			if *v/2 < floor {
				return false
			}
			*v /= 2
			return true
		}
	}
	opt := func(s *harness.Scenario) *agents.Options { return &s.Agents.Options }
	out = append(out,
		halve(func(s *harness.Scenario) *int { return &opt(s).Agents }, 1),
		func(s *harness.Scenario) bool {
			if s.Duration/2 < time.Second {
				return false
			}
			s.Duration /= 2
			return true
		},
		halve(func(s *harness.Scenario) *int { return &opt(s).SystemPromptWords }, 16),
		halve(func(s *harness.Scenario) *int { return &opt(s).ToolOutputWords }, 8),
		halve(func(s *harness.Scenario) *int { return &opt(s).TurnsPerSession }, 1),
		halve(func(s *harness.Scenario) *int { return &opt(s).MaxTokens }, 2),
		// Longer pauses between an agent's turns: fewer requests in the
		// same schedule.
		func(s *harness.Scenario) bool {
			t := &opt(s).ThinkTime
			if *t >= s.Duration/2 {
				return false
			}
			*t = max(2**t, 50*time.Millisecond)
			return true
		},
		func(s *harness.Scenario) bool { return zero(&opt(s).SubRequestRate) },
		func(s *harness.Scenario) bool { return zero(&opt(s).CancelDecodeRate) },
		func(s *harness.Scenario) bool { return zero(&opt(s).CancelQueuedRate) },
		func(s *harness.Scenario) bool { return zero(&opt(s).DeadlineRate) },
		func(s *harness.Scenario) bool {
			if opt(s).KillEvery == 0 && len(opt(s).KillAllAt) == 0 && opt(s).KillAllEvery == 0 {
				return false
			}
			opt(s).KillEvery, opt(s).KillAllAt, opt(s).KillAllEvery = 0, nil, 0
			return true
		},
	)
	return out
}

func zero(v *float64) bool {
	if *v == 0 {
		return false
	}
	*v = 0
	return true
}
