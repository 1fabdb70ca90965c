// Package hooks carries engine.Hooks over HTTP: ServeHooks is the handler an
// engine process mounts at its loopback-only /debug/hooks, and HooksClient is
// the engine.Hooks a harness uses to reach it. Both sides live here so the
// wire format is defined once.
//
// The engine imports this package, so it must import only engine and the
// standard library (never faults, harness/, suites/ or Ginkgo).
package hooks
