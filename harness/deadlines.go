package harness

import (
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/record"
)

// roomDeadlines bounds each room state by the engine's backstop deadlines,
// as the bundled engine applies them: prefill Bootstrapping by the
// bootstrap timeout, WaitingForInput by bootstrap plus inflight (it waits
// for a forward slot in between), Transferring by the inflight timeout;
// decode WaitingForInput and Transferring by the waiting timeout. Decode's
// Bootstrapping (waiting for pages) and Failed have no deadline of their
// own. Only targets that run the scenario's engine config (bundled, procs)
// get deadlines; for an external one the config says nothing (nil).
func roomDeadlines(kind string, cfg contract.EngineConfig) (map[string]time.Duration, time.Duration) {
	if kind == "external" {
		return nil, 0
	}
	c, _, err := cfg.Resolve()
	if err != nil {
		return nil, 0
	}
	margin := 2*time.Second + 2*c.CheckInterval
	return map[string]time.Duration{
		record.RoomDeadlineKey("prefill", contract.StateBootstrapping):   c.BootstrapTimeout,
		record.RoomDeadlineKey("prefill", contract.StateWaitingForInput): c.BootstrapTimeout + c.InflightTimeout,
		record.RoomDeadlineKey("prefill", contract.StateTransferring):    c.InflightTimeout,
		record.RoomDeadlineKey("decode", contract.StateWaitingForInput):  c.WaitingTimeout,
		record.RoomDeadlineKey("decode", contract.StateTransferring):     c.WaitingTimeout,
	}, margin
}
