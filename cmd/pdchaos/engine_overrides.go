package main

import (
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/spf13/cobra"
)

// engineOverrides are `pdchaos run` flags that override the scenario's
// engine: block for the bundled engine, so any preset can be run with
// SGLang's gauge timing without copying it. repro.yaml records the
// resolved scenario, so a replay keeps them.
type engineOverrides struct {
	gauges  string
	idle    time.Duration
	noLoads bool
}

func (e *engineOverrides) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&e.gauges, "gauges", "", "bundled engine: override engine.gauges (live or logged; empty: the scenario's)")
	fl.DurationVar(&e.idle, "idle-metrics-interval", 0, "bundled engine: override engine.idle_metrics_interval (0: the scenario's)")
	fl.BoolVar(&e.noLoads, "no-loads", false, "bundled engine: serve no /v1/loads, so a logged engine is judged by its gauges alone")
}

// apply sets the overrides on sc and validates the result.
func (e *engineOverrides) apply(sc *harness.Scenario) error {
	if e.gauges != "" {
		m, err := contract.ParseGaugeMode(e.gauges)
		if err != nil {
			return fmt.Errorf("--gauges: %w", err)
		}
		sc.Engine.Gauges = m
	}
	if e.idle < 0 {
		return fmt.Errorf("--idle-metrics-interval: %v must not be negative", e.idle)
	}
	if e.idle > 0 {
		sc.Engine.IdleMetricsInterval = e.idle
	}
	if e.noLoads {
		sc.Engine.NoLoads = true
	}
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scenario with engine overrides: %w", err)
	}
	return nil
}
