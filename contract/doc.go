// Package contract is what the engine, the faults, the agents and the
// harness agree on at their seams: named links and how a proxy is put in
// front of one, engine hooks and their HTTP wire format, SGLang's metric
// names with the lists a wedge is judged by, room records and states as
// /debug/rooms reports them, the /generate types, the router's headers and
// every endpoint path, the known regressions with the scenario and checker
// that catch each, the wire dialects of the control messages (Wire), the
// code probes (Probes: one named probe per failure-handling branch of the
// engine, with its place in the source, kept true by probes_test.go), and
// ErrUnsupported.
//
// It is a leaf: contract imports only the standard library, so a fault
// injector or a checker can name an engine concept without pulling in the
// engine runtime or Prometheus. The rule is enforced by the import test in
// this package (imports_test.go), which also enforces the rules every other
// package's doc.go states.
package contract
