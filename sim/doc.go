// Package sim is pdchaos's deterministic simulator: it runs the bundled
// engine's real protocol core (engine/core: prefill scheduler, bootstrap
// loops, transfer workers, decode scheduler, notice receivers, TP ranks)
// together with a router, a client population and the scenario's faults as
// actors on one goroutine. A seeded scheduler (math/rand/v2 PCG from the
// seed) orders every step, a virtual clock jumps to the next due event, and
// an in-memory network carries control messages, notices, KV chunks and
// HTTP requests, where faults delay, hold, drop, duplicate or lose them by
// link, kind and room. The same seed gives the same run, byte for byte, so
// a failing seed replays exactly (Options.Trace prints the interleaving).
//
// A simulated run is judged by harness/check exactly as a live one: the
// simulator writes the event records a live run's recorder writes (gauges
// per rank, rooms snapshots with their histories, request outcomes,
// liveness probes, fault windows, code probe hits) and calls check.Judge.
//
// sim must not import net, net/http, os, os/exec, syscall, math/rand, the
// engine runtime (package engine), fault injectors, agents' runtime or the
// harness; it reads no wall clock and draws no global randomness. The
// scenario adapter (sim/scenario) turns a harness scenario into a Config.
// contract/imports_test.go enforces the imports; sim's tests the clock.
package sim
