// Package engine is pdchaos's bundled prefill/decode engine: a router, a
// prefill and a decode role that behave like SGLang's PD mode (same
// endpoints, same metric names, the same KV-transfer protocol shape over real
// TCP and ZMTP), without GPUs. Each role runs as its own process
// (`pdchaos engine --role …`) or all in one process (Cluster).
//
// The protocol and queue logic are pure state machines in engine/core; this
// package is the live runtime that drives them with goroutines, sockets and
// the wall clock. What the engine shares with faults, agents and the harness
// (links, hooks, metric names, room records, /generate types, paths) lives
// in package contract.
//
// Every failure-handling branch (abort, failure, timeout or backstop, late,
// duplicate or unknown message, peer loss, restart, release) of the core and
// of this runtime carries a code probe (contract.Probes). Each role owns one
// core.ProbeCounts, shared with its core, and exports it as
// pdchaos:probe_hits_total{probe=…} on /metrics and as JSON on the
// loopback-only /debug/probes; the router serves both too.
//
// engine must not import faults, agents, harness, suites or Ginkgo; the
// import test in package contract enforces it.
package engine
