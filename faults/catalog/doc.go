// Package catalog is the one table of scenario fault kinds: for each kind
// its YAML name, layer, parameters (name, Go type, required or default,
// bounds, a one-line doc) and the constructor that turns validated
// parameters into a faults.Fault. The harness validates and builds scenario
// fault entries from it, and `pdchaos faults list` prints it, so a fault
// type is added in one place and is usable from YAML at once. A test fails
// when a fault type in faults/... has no catalogue entry.
//
// The table is built on each call to Kinds (no package state).
//
// Dependency rule: this package imports only contract, faults and the
// injector subpackages of faults (network, protocol, process), the standard
// library and what those bring (Toxiproxy). It must not import harness/,
// suites/, Ginkgo, or the engine runtime (engine and engine/...); parameter
// values arrive as plain Go values (what a YAML or JSON decoder yields). The
// import test in package contract enforces the rule.
package catalog
