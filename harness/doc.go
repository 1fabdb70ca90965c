// Package harness is pdchaos's core loop: it opens a target (harness/target:
// the bundled engine in-process or as role processes, or an external
// SGLang-style deployment described by URLs), starts agents and open-loop
// load, plays the scenario's fault schedule, records every metrics scrape,
// room snapshot, request outcome and fault window on one monotonic clock
// into events.jsonl (harness/record, whose watchdog flags a gauge stuck
// above zero with no progress the moment it happens), drains, and judges
// the run with the pure checkers of harness/check.
//
// The root package keeps what a run is: the scenario file (scenario.go,
// faultspec.go), run orchestration (run.go, finish.go), the verdict rule
// over a recorded log (judge.go, JudgeLog, also used to re-judge stored
// runs), result.json (result.go) and the repro line and versions
// (repro.go). repro.yaml is written when a run starts and completed when it
// ends; report.html and junit.xml are rendered by reports/ at the end.
//
// harness composes engine, faults, agents and its subpackages. It must not
// import suites/ or Ginkgo: suites import harness, never the other way
// round. Library code here never panics or asserts.
package harness
