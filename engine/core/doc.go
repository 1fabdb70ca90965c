// Package core holds the bundled engine's protocol and queue logic as pure
// state machines: prefill (scheduler, bootstrap loop, transfer workers) and
// decode (prealloc, transfer, running, receivers) for all their TP ranks,
// the KVPoll status table with SGLang's merge rules, the control-message
// codec of each wire dialect (wire.go: one table for NIXL, one for
// Mooncake; the state machine is the same for both), and the known
// regressions, each switched on where the upstream bug lived.
//
// Nothing here starts a goroutine, opens a socket, reads the clock or draws a
// random number: every method takes the time, and each SGLang thread is an
// actor whose loop body is one method call (Prefill.Step, Prefill.OnControl,
// Prefill.WorkerBegin/WorkerSend/WorkerEnd, Decode.Step, Decode.OnChunk,
// Decode.OnNotice). The live runtime in package engine drives them with
// goroutines, sockets and a mutex; the scripted tests here drive the same
// calls by hand with a fake clock, choosing which actor steps next.
//
// Each failure-handling branch counts a code probe (contract.Probes) in the
// ProbeCounts its side owns (PrefillConfig.Probes, DecodeConfig.Probes):
// an array of atomic counters indexed by probe, so a hit costs one add. The
// runtime exports the counts; the core only increments them.
//
// core imports only engine/model, contract (names, room records, the
// regression set), internal/jsonlite (a reflection-free JSON reader that
// imports nothing of pdchaos) and the standard library without IO; it must not import
// engine, faults, agents, harness or any test framework. The import test in
// package contract enforces it.
package core
