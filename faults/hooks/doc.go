// Package hooks reaches an engine's pause gates over HTTP: HooksClient is the
// contract.Hooks a harness uses for an engine in another process, speaking to
// the loopback-only /debug/hooks that engine.ServeHooks serves. The wire
// types are the engine's, so the format is defined once.
//
// hooks imports only engine and the standard library; it must not import
// harness/, suites/ or Ginkgo.
package hooks
