package sim

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Summary is what a seed range showed.
type Summary struct {
	// Seeds is how many seeds ran (fewer than asked when stopped at the
	// first failure or cancelled).
	Seeds int
	// Failing are the failing seeds' results, in seed order (traces and
	// events dropped).
	Failing []Result
	// Requests sums the client requests of every seed.
	Requests int64
	// ProbeSeeds counts, per code probe, the seeds that hit it.
	ProbeSeeds map[string]int
}

// ExploreOptions say how to walk a seed range. Zero values: one worker,
// every seed.
type ExploreOptions struct {
	// Workers is how many seeds run at once (each on its own goroutine,
	// each run still single-threaded and deterministic); default 1.
	Workers int
	// StopAtFirst stops handing out seeds once one fails; the summary
	// then holds the lowest failing seed found.
	StopAtFirst bool
	// Checker, when set, counts a seed as failing only when this checker
	// fails (a regression's catalogue checker), so a hunt for one bug is
	// not stopped by another finding.
	Checker string
	// Swarm draws each seed's fault mix and client policy (see Swarm).
	Swarm bool
}

// fails reports whether r counts as failing under o.
func (o ExploreOptions) fails(r Result) bool {
	if o.Checker == "" {
		return r.Failed != ""
	}
	c, ok := r.Checks.Get(o.Checker)
	return ok && c.Status == "fail"
}

// Explore runs cfg for every seed in [from, to] and gathers failures and
// probe coverage. It returns early, with what it has, when ctx ends.
func Explore(ctx context.Context, cfg Config, from, to uint64, o ExploreOptions) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if to < from {
		return Summary{}, fmt.Errorf("explore %s: seed range %d..%d is empty", cfg.Name, from, to)
	}
	workers := max(o.Workers, 1)
	seeds := make(chan uint64)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				c, desc := cfg, ""
				if o.Swarm {
					c, desc = Swarm(cfg, seed)
				}
				r, err := Run(ctx, c, seed, Options{})
				if ctx.Err() != nil {
					continue // cut short: neither a pass nor a failure
				}
				if err != nil { // a drawn config the validator refuses: a bug in Swarm
					r = Result{Seed: seed, Failed: "config", Swarm: err.Error()}
				}
				r.Swarm = desc
				results <- r
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		defer close(seeds)
		for s := from; s <= to; s++ {
			select {
			case seeds <- s:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
			if s == to {
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	sum := Summary{ProbeSeeds: map[string]int{}}
	stopped := false
	for r := range results {
		sum.Seeds++
		sum.Requests += int64(r.Requests)
		for n, h := range r.Probes {
			if h > 0 {
				sum.ProbeSeeds[n]++
			}
		}
		if o.fails(r) {
			r.Trace, r.Events = "", nil
			sum.Failing = append(sum.Failing, r)
			if o.StopAtFirst && !stopped {
				stopped = true
				close(stop)
			}
		}
	}
	sort.Slice(sum.Failing, func(i, j int) bool { return sum.Failing[i].Seed < sum.Failing[j].Seed })
	return sum, ctx.Err()
}
