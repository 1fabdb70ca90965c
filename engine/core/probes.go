package core

import (
	"sync/atomic"

	"github.com/pdchaos/pdchaos/contract"
)

// ProbeCounts counts hits of every code probe (contract.Probes) in one
// engine instance: an array indexed by probe, so a hit is one atomic add
// with no lookup and no allocation. The core increments the counters of
// its own branches under the runtime's lock; the runtime increments those
// of its socket and HTTP branches from any goroutine and exports them all.
// The zero value is ready; a nil *ProbeCounts counts nothing.
type ProbeCounts struct {
	n [contract.NumProbes]atomic.Int64
}

// Hit counts one pass through the branch of probe id.
func (c *ProbeCounts) Hit(id contract.ProbeID) {
	if c != nil {
		c.n[id].Add(1)
	}
}

// Count returns the hits of probe id so far.
func (c *ProbeCounts) Count(id contract.ProbeID) int64 {
	if c == nil {
		return 0
	}
	return c.n[id].Load()
}

// Side returns the hits of every probe of side, zero ones too, in table
// order.
func (c *ProbeCounts) Side(side string) []contract.ProbeHit {
	var out []contract.ProbeHit
	for _, p := range contract.ProbesOf(side) {
		out = append(out, contract.ProbeHit{Name: p.Name, Hits: c.Count(p.ID)})
	}
	return out
}
