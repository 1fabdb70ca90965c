package engine

import (
	"log/slog"
	"time"
)

// steadyClock is a role's clock for everything it records and decides: a
// wall time fixed once, advanced by the monotonic clock. The harness reads
// room histories against its run's start plus monotonic offsets; stamped
// with the live wall clock, a step of it (NTP, a VM resumed) in mid-run
// moves every later event by the step, and checks that place events in
// time fail a fixed engine (one run saw its rooms jump 13.3 s). Network
// deadlines and timers keep the live clock.
type steadyClock struct {
	anchor time.Time // the wall time at start, less step; no monotonic reading
	start  time.Time // with its monotonic reading
}

// newSteadyClock starts a clock at the host's wall time less step: how far
// the host's wall clock has stepped since the run this role belongs to
// began (RoleOptions.ClockStep), so a role started after a step reads the
// same time as the roles started before it.
func newSteadyClock(step time.Duration) steadyClock {
	now := time.Now()
	return steadyClock{anchor: now.Round(0).Add(-step), start: now}
}

// Now is the clock's reading. The time carries no monotonic reading:
// differences between readings are the monotonic clock's anyway.
func (c steadyClock) Now() time.Time { return c.anchor.Add(time.Since(c.start)) }

// RoleOptions are a role's optional settings (StartPrefillWith,
// StartDecodeWith); the zero value is what StartPrefill and StartDecode use.
type RoleOptions struct {
	// Log receives the role's log lines; nil discards them.
	Log *slog.Logger
	// ClockStep is how far the host's wall clock has stepped since the
	// harness's run began (contract.ClockStepFlag): the role's clock
	// starts that much behind the host's, on the run's time line. Zero:
	// the host's wall clock at start.
	ClockStep time.Duration
}
