package harness

import (
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/record"
)

// roomDeadlines bounds each room state by the engine's backstop deadlines,
// as contract.StateDeadlines has them (prefill Bootstrapping by the
// bootstrap timeout, WaitingForInput by bootstrap plus inflight,
// Transferring by the inflight timeout; decode WaitingForInput and
// Transferring by the waiting timeout), with contract.StateMargin. Only
// targets that run the scenario's engine config (bundled, procs) get
// deadlines; for an external one the config says nothing (nil).
func roomDeadlines(kind string, cfg contract.EngineConfig) (map[string]time.Duration, time.Duration) {
	if kind == "external" {
		return nil, 0
	}
	c, _, err := cfg.Resolve()
	if err != nil {
		return nil, 0
	}
	out := map[string]time.Duration{}
	for _, s := range contract.StateDeadlines() {
		out[record.RoomDeadlineKey(s.Role, s.State)] = s.Bound(c)
	}
	return out, contract.StateMargin(c)
}
