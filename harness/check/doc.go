// Package check holds the pure checkers: functions from a recorded event log
// (events.jsonl, as Event values) to a verdict per invariant — rooms-terminal,
// slots-released, liveness, client-outcomes, cancels-reached,
// timeouts-explained, integrity, no-leaks, faults-verified and load-floor —
// and Judge, which runs them in order.
// Because they read nothing but the log, a stored run can be judged again
// with today's checkers (`pdchaos check RUN_DIR`), and each checker is tested
// offline on recorded logs in testdata/, including a known-bad log that must
// fail it (regenerate them with testdata/gen.py, run from testdata/).
//
// Layout: event.go is the log's schema (the event types and ReadEvents);
// verdict.go the results (Status, CheckResult, StuckRoom, Checks); view.go
// indexes a log; judge.go runs the checkers; each checker has its own file,
// named after it (rooms_terminal.go, slots_released.go, …).
//
// check does no file or network IO and starts no goroutine: ReadEvents
// decodes a reader the caller opened. It may import only the standard
// library, contract, agents/outcome, faults/schedule (the records it
// reads; schedule brings faults' interfaces, nothing more) and faults (the
// layer names of those records). It must not
// import the engine (engine/...), the agents' runtime, harness or its other
// subpackages, Prometheus's client or parser, or Ginkgo; `go list -deps`
// shows it and deps_test.go holds it.
package check
