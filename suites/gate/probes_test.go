package gate

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
)

// unreachableInGate lists the code probes no gate spec is expected to hit
// today (a probe of engine/core that a simulated seed hits counts as hit,
// a seed of a preset on the fixed engine or of a regression's catching
// preset with that regression on: the gate's seeds 1-100 are fixed, so it
// is hit every time), each with why: the branches no preset drives yet (a fault kind no
// preset uses, a request shape the agents never send) and races the
// presets reach in some seeds only. The
// hostile-peer specs' hits count too (a status other than Failed, a KV
// write naming another rank, a KV connection reset before decode's
// reply, a route for a rank prefill lacks, a stream event that is not
// JSON, and on Mooncake chunks addressed to decode's own buffers that
// overrun their pages or land on a committed room: what only a peer that
// is not the bundled engine sends). This is
// the one place: a probe missing here that no gate run hits fails the
// gate, naming it; a probe listed here that a run did hit is reported, so
// the list shrinks as presets are added.
func unreachableInGate() map[string]string {
	// Empty: every probe to reach is reached. The defensive branches the
	// fixed engine never takes are Never probes (contract.Probes), which
	// no spec is asked to hit and every run asserts unhit
	// (unreachable-branches); a regression's branch its catching preset
	// misses is reached by regressionBranches.
	return map[string]string{}
}

// probeCoverage gathers every gate run's code probe hits, by spec, for the
// final spec. Specs add from the Ginkgo process; the mutex is for safety.
type probeCoverage struct {
	mu   sync.Mutex
	runs map[string][]*harness.Result
	// sim holds each simulated spec's seeds per probe.
	sim map[string]map[string]int
	// live holds the hits of live specs that are not scenario runs (the
	// hostile peers), per probe.
	live map[string]map[string]int
}

func newProbeCoverage() *probeCoverage {
	return &probeCoverage{runs: map[string][]*harness.Result{}, sim: map[string]map[string]int{}, live: map[string]map[string]int{}}
}

// addSim records a simulated spec's probe coverage (seeds per probe).
func (c *probeCoverage) addSim(key string, seeds map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sim[key] = seeds
}

// addLive records the probe hits of a live spec that is not a scenario run.
func (c *probeCoverage) addLive(key string, hits map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[key] = hits
}

// liveHits sums those specs' hits per probe.
func (c *probeCoverage) liveHits() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, m := range c.live {
		for p, n := range m {
			out[p] += n
		}
	}
	return out
}

// simHits sums every simulated spec's seeds per probe.
func (c *probeCoverage) simHits() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, m := range c.sim {
		for p, n := range m {
			out[p] += n
		}
	}
	return out
}

// add records one run of spec key.
func (c *probeCoverage) add(key string, res *harness.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[key] = append(c.runs[key], res)
}

// missing lists the keys of want no run was recorded for.
func (c *probeCoverage) missing(want []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, k := range want {
		_, simulated := c.sim[k]
		if _, live := c.live[k]; len(c.runs[k]) == 0 && !simulated && !live {
			out = append(out, k)
		}
	}
	return out
}

// results returns every recorded run.
func (c *probeCoverage) results() []*harness.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*harness.Result
	for _, rs := range c.runs {
		out = append(out, rs...)
	}
	return out
}

// judge splits the probes no scenario run hit, leaving out those a live
// hostile-peer spec hit (live), into those of engine/core some
// simulated seed hit (simOnly: executed by the gate all the same, and
// every time: the gate's simulated seeds are fixed), those the gate fails
// on (not listed as unreachable), and reports listed probes some run did
// hit.
func judgeProbes(results []*harness.Result, sim, live map[string]int, unreachable map[string]string) (unhit, nowHit, simOnly []string) {
	missed := map[string]bool{}
	for _, p := range harness.UnhitProbes(results...) {
		if live[p.Name] > 0 {
			continue // the live engine took the branch, in a hostile-peer spec
		}
		if sim[p.Name] > 0 && inCore(p) {
			simOnly = append(simOnly, fmt.Sprintf("%s (%d seeds)", p.Name, sim[p.Name]))
			continue
		}
		missed[p.Name] = true
		if _, ok := unreachable[p.Name]; !ok {
			unhit = append(unhit, fmt.Sprintf("%s (%s): %s", p.Name, strings.Join(p.Sites, ", "), p.Doc))
		}
	}
	for n := range unreachable {
		if !missed[n] {
			nowHit = append(nowHit, n)
		}
	}
	sort.Strings(nowHit)
	sort.Strings(simOnly)
	return unhit, nowHit, simOnly
}

// inCore says whether every site of p is in engine/core, the code the
// simulator runs itself; its hits of the I/O layer's probes come from a
// model of that layer, which proves nothing about the live branch.
func inCore(p contract.Probe) bool {
	for _, site := range p.Sites {
		if !strings.HasPrefix(site, "engine/core/") {
			return false
		}
	}
	return len(p.Sites) > 0
}

// unknownProbes lists names in the unreachable list that are no probe.
func unknownProbes(unreachable map[string]string) []string {
	var out []string
	for n, why := range unreachable {
		if _, ok := contract.LookupProbe(n); !ok || why == "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func presetKey(name string) string     { return "preset " + name }
func regressionKey(name string) string { return "regression " + name }
