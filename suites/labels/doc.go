// Package labels is the one label vocabulary of pdchaos's Ginkgo suites
// (Kubernetes ValidFeatures style): fault:<kind>, component:<name>,
// tier:smoke|gate|soak, slow, disruptive and regression:<name>. Fault kinds
// and regression names come from the harness and engine catalogues, so a
// label can never name a fault or bug that does not exist, and
// `-ginkgo.label-filter` queries can be written against a fixed list.
//
// Suites build labels through Vocabulary.Label, which refuses an unknown
// label while the spec tree is built, and check every running spec's labels
// with Vocabulary.Check, which also catches labels written with a raw
// ginkgo.Label. It is imported only by suites/; it may import harness and
// engine, never the other way round.
package labels
