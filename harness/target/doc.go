// Package target is the seam between the harness and a deployment: the
// Target interface (what faults need — links, hooks, processes — plus the
// URLs the recorder, probes and checks read), Layers and RequireLayers (which
// fault layers a target can take, asked by capability, never by concrete
// type), and the three ways to get one, each a Source: Bundled (the bundled
// engine in-process), Procs (the bundled engine as three role processes, for
// process faults) and External (any SGLang-style deployment by URL; with a
// bootstrap URL it interposes the control links itself: a /route rewriter
// and frame Fronts from faults/protocol, see external_bootstrap.go).
//
// target may import the bundled engine (engine/...), faults and contract.
// harness/check must not import target (the checkers judge a recorded log,
// not a live deployment), and neither may harness/record, which reads a
// target's URLs through its own small interface. target must not import
// harness, its other subpackages, suites or Ginkgo.
package target
