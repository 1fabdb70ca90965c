// Package faults holds faults as values: the Fault interface every injector
// implements, the Target seam a deployment offers them, the engine-hook
// faults (pause transfer workers, stall the bootstrap loop or a scheduler)
// and Reset, which clears what a crashed run left on a target.
//
// Injectors for the other layers live in subpackages: network (embedded
// Toxiproxy), protocol (ZMTP frame proxy), process (signals to role
// processes), hooks (the /debug/hooks wire format) and schedule (fault
// timelines and the player that applies them). catalog is the one table of
// scenario fault kinds that builds all of them from YAML parameters.
//
// This package and its subpackages must not import the engine runtime
// (engine/...: they speak to a target through contract), agents/, harness/,
// suites/ or Ginkgo; the harness composes them. faults/enginetest, tests
// only, is the exception that runs them against the bundled engine. The
// import test in package contract enforces it.
package faults
