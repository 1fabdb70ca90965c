// Package harness is pdchaos's core loop: it opens a Target (the bundled
// engine in-process or as role processes, or an external SGLang-style
// deployment described by URLs), starts agents and open-loop load, plays the
// scenario's fault schedule, records every metrics scrape, room snapshot,
// request outcome and fault window on one monotonic clock into events.jsonl,
// drains, and judges the run with checkers (rooms-terminal, slots-released,
// liveness, client-outcomes, integrity, no-leaks, faults-verified,
// load-floor). A watchdog flags a gauge stuck above zero with no progress the
// moment it happens.
//
// Checkers read only the recorded event log, so they are tested offline on
// logs in testdata/, including a known-bad log per checker.
//
// harness composes engine, faults and agents. It must not import suites/ or
// Ginkgo: suites import harness, never the other way round. Library code here
// never panics or asserts.
package harness
