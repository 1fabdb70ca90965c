package main

import (
	"fmt"
	"strings"
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
	wire    wireOverride
}

func (e *engineOverrides) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&e.gauges, "gauges", "", "bundled engine: override engine.gauges (live or logged; empty: the scenario's)")
	fl.DurationVar(&e.idle, "idle-metrics-interval", 0, "bundled engine: override engine.idle_metrics_interval (0: the scenario's)")
	fl.BoolVar(&e.noLoads, "no-loads", false, "bundled engine: serve no /v1/loads, so a logged engine is judged by its gauges alone")
	e.wire.register(cmd)
}

// apply sets the overrides on sc and validates the result.
func (e *engineOverrides) apply(sc *harness.Scenario) error {
	if err := e.wire.apply(sc); err != nil {
		return err
	}
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

// wireOverride is the --wire flag of `pdchaos run` and `pdchaos sim`: any
// preset in the other SGLang dialect (Mooncake's frames, its Success status
// over ZMQ, its unfenced KV writes) without copying the file.
type wireOverride struct{ name string }

func (w *wireOverride) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&w.name, "wire", "", fmt.Sprintf("bundled engine: override engine.wire, the control-plane dialect (%s; empty: the scenario's)", wireNames()))
}

// apply sets the dialect on sc; an unknown name is an error naming the
// valid ones, and sc is left as it was.
func (w *wireOverride) apply(sc *harness.Scenario) error {
	if w.name == "" {
		return nil
	}
	wire, err := contract.ParseWire(w.name)
	if err != nil {
		return fmt.Errorf("--wire: %w", err)
	}
	sc.Engine.Wire = wire
	return nil
}

// flag is the flag as a replay command repeats it ("" when not given).
func (w *wireOverride) flag() string {
	if w.name == "" {
		return ""
	}
	return " --wire " + w.name
}

func wireNames() string {
	var names []string
	for _, w := range contract.Wires() {
		names = append(names, string(w))
	}
	return strings.Join(names, ", ")
}
