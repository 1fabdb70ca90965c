// Package schedule places faults on a run's timeline and plays them.
//
// Plan is a pure function: from one seed, a list of entries (at, for,
// every, count, each optionally a random range) and the run length it
// resolves a concrete Timeline up front, so the same seed gives the same
// windows and a repro bundle can print them. Timeline.Due says, for an
// elapsed time, which windows end and start and when to look again, with no
// clock inside (vegeta's Pace style), so it is table-tested.
//
// Player is the runtime part: it plays a Timeline against a target on one
// monotonic base time, records every window, and heals every active fault on
// every exit path (normal end, error, cancel, panic in a callback).
//
// This package must not import harness/, suites/ or Ginkgo.
package schedule
