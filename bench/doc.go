// Package bench measures pdchaos against references taken in the same run:
// the bundled engine against a bare net/http handler serving replies of the
// same size, the agent swarm's client CPU against vegeta alone at the same
// rate, and the memory of a long soak and of watch sampled over time.
// Absolute numbers drift on shared machines, so every figure that can carry
// a reference does, and comparisons between runs use the ratio.
//
// bench composes the engine, the agents and the harness's binaries; nothing
// but cmd/pdchaos imports it, and it never imports suites or Ginkgo.
package bench
