// Package testkit is the test support shared by the tests of every package
// in the module: waiting on a condition with a deadline (Eventually,
// Consistently, Poll) instead of sleeping, goroutine-leak checks with the
// module's goleak options (NoLeaks, VerifyTestMain), reading an engine the
// way an operator does (/metrics gauges, /debug/rooms, and the one
// definition of "drained"), and talking to the router the way a client does
// (a streamed chat completion read with package sse, an SGLang /generate
// with a chosen rid and room). Starting the bundled cluster for a test is in
// testkit/testcluster, which adds the engine import.
//
// testkit is for tests only: it must never be imported by non-test product
// code (only _test.go files and other test-support packages may import it;
// TestOnlyTestsImportTestkit enforces this). It imports contract, sse,
// engine/model, goleak and the Prometheus text parsers, and must not import
// engine, zmtp, faults, agents, harness, suites or Ginkgo, so that the
// internal tests of engine and zmtp (package engine, package zmtp) can use
// it without an import cycle.
package testkit
