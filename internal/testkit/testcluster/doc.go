// Package testcluster starts the bundled engine for a test: an in-process
// cluster (router, prefill, decode over loopback TCP) closed when the test
// ends. It is the part of the shared test support (internal/testkit) that
// needs the engine; it is separate so that testkit itself does not import
// engine and the engine's own internal tests can use testkit.
//
// testcluster is for tests only (it imports testing): non-test product code
// must never import it. It imports engine and must not import
// faults, agents, harness, suites or Ginkgo.
package testcluster
