package mutate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// SimulatedDir is where the code the simulator runs lives: a mutant
// outside it (the I/O layer: HTTP handlers, sockets, the router) changes
// nothing a simulated run executes, so the simulator's screen leaves it
// out instead of calling it missed.
const SimulatedDir = "engine/core/"

// Simulated says whether the simulator runs m's file.
func Simulated(m Mutant) bool { return strings.HasPrefix(m.File, SimulatedDir) }

var (
	simSummary = regexp.MustCompile(`^(\S+): (\d+) seeds, (\d+) failing`)
	simChecker = regexp.MustCompile(`^  (\S+) failed in (\d+) seeds`)
	simProbe   = regexp.MustCompile(`^    (\S+/\S+)\s+(\d+) seeds`)
)

// simOutput is what `pdchaos sim P --seeds 1..N --probes` printed.
type simOutput struct {
	seeds, failing int
	// failed maps each failing checker to the seeds it failed in.
	failed map[string]int
	// probes maps each hit probe to the seeds that hit it.
	probes map[string]int64
}

// parseSim reads sim's summary; ok is false when it printed none (the
// simulator itself failed).
func parseSim(out []byte) (s simOutput, ok bool) {
	s.failed, s.probes = map[string]int{}, map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := simSummary.FindStringSubmatch(line); m != nil {
			s.seeds, _ = strconv.Atoi(m[2])
			s.failing, _ = strconv.Atoi(m[3])
			ok = true
		} else if m := simChecker.FindStringSubmatch(line); m != nil {
			s.failed[m[1]], _ = strconv.Atoi(m[2])
		} else if m := simProbe.FindStringSubmatch(line); m != nil {
			s.probes[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
		}
	}
	return s, ok
}

// checkers lists the failing checkers, most seeds first (ties by name).
func (s simOutput) checkers() []string {
	var out []string
	for c := range s.failed {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if s.failed[out[i]] != s.failed[out[j]] {
			return s.failed[out[i]] > s.failed[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// runSim runs `bin sim preset --seeds from..from+N-1 --probes` in the copy,
// and as many swarm seeds again with --swarm when opts asks for them; with
// a regression, the plain seeds only with it on, as the gate's simulated
// spec for a regression explores them.
// Hits counts the seeds that hit any of probes (a seed hitting two is
// counted twice: enough to tell reached from not).
func runSim(ctx context.Context, opts Options, bin, dir, preset string, probes []string, regression string) RunResult {
	res := RunResult{Preset: preset}
	name, wire, _ := presetArgs(preset) // checked by Options.defaults
	passes := []struct {
		n     int
		extra []string
	}{{opts.SimSeeds, nil}, {opts.SimSwarmSeeds, []string{"--swarm"}}}
	if regression != "" {
		passes = passes[:1]
		passes[0].extra = []string{"--regression", regression}
	}
	var all simOutput
	all.failed, all.probes = map[string]int{}, map[string]int64{}
	for _, pass := range passes {
		if pass.n <= 0 {
			continue
		}
		seeds := fmt.Sprintf("%d..%d", opts.Seed, opts.Seed+uint64(pass.n)-1)
		var out bytes.Buffer
		args := append(append([]string{"sim", name, "--seeds", seeds, "--probes"}, wire...), pass.extra...)
		code := runBinary(ctx, opts.RunTimeout, bin, dir, &out, args...)
		s, ok := parseSim(out.Bytes())
		if !ok {
			// No summary: the simulated engine panicked (or sim refused).
			res.ExitCode, res.Crashed = code, true
			res.Output = tail(out.String(), 2000)
			return res
		}
		all.seeds += s.seeds
		all.failing += s.failing
		for c, n := range s.failed {
			all.failed[c] += n
		}
		for p, n := range s.probes {
			all.probes[p] += n
		}
	}
	res.Probes = all.probes
	res.Failed, res.FailedSeeds = all.checkers(), all.failed
	res.NotPassed = res.Failed
	if all.failing > 0 {
		res.ExitCode = 1
		res.FirstFailure = fmt.Sprintf("%d of %d seeds failed", all.failing, all.seeds)
	}
	for _, p := range probes {
		res.Hits += all.probes[p]
	}
	return res
}
