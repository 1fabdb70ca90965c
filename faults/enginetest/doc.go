// Package enginetest holds end-to-end fault tests on the bundled engine:
// every fault kind of faults/ (network, protocol, engine hooks) and the
// schedule player, injected into a real in-process engine.Cluster over real
// loopback sockets, observed through the router, /metrics and /debug/rooms,
// and healed, after which traffic must flow normally again.
//
// The package has test files only (besides this one). It must not import
// harness/, suites/ or Ginkgo: it checks faults/ against engine/ directly.
package enginetest
