// Package faketarget is a small faults.Target for the tests of the fault
// injectors: real loopback servers behind named links, a dialer that honours
// Interpose, engine hooks built from gate.Gate values and role processes
// that are real child processes. It exists so every injector is tested
// against real sockets, signals and gates without the bundled engine.
//
// It is test support only: production code must not import it. Like the
// rest of faults/ it must not import harness/, suites/ or Ginkgo.
package faketarget
