// Package core holds the bundled engine's protocol and queue logic as pure
// state machines: prefill (scheduler, bootstrap loop, transfer workers) and
// decode (prealloc, transfer, running, receivers) for all their TP ranks,
// the KVPoll status table with SGLang's merge rules, the control-message
// codec, and the known regressions, each switched on where the upstream bug
// lived.
//
// Nothing here starts a goroutine, opens a socket, reads the clock or draws a
// random number: every method takes the time, and each SGLang thread is an
// actor whose loop body is one method call (Prefill.Step, Prefill.OnControl,
// Prefill.WorkerBegin/WorkerSend/WorkerEnd, Decode.Step, Decode.OnChunk,
// Decode.OnNotice). The live runtime in package engine drives them with
// goroutines, sockets and a mutex; a deterministic simulator will drive the
// same calls from a seeded scheduler with virtual time, choosing which actor
// steps next, and deliver messages through simulated links.
//
// core imports only engine/model; it must not import engine, faults,
// agents, harness or any test framework.
package core
