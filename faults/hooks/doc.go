// Package hooks reaches an engine's pause gates over HTTP: HooksClient is the
// contract.Hooks a harness uses for an engine in another process, speaking to
// the loopback-only /debug/hooks that engine.ServeHooks serves. The wire
// types are contract's, so the format is defined once.
//
// hooks imports only contract and the standard library; it must not import
// the engine runtime, harness/, suites/ or Ginkgo.
package hooks
