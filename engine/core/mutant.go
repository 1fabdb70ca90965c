//go:build !pdchaos_mutant

package core

// mutantKeepOrphans breaks one fixed-engine failure path on purpose when
// the core is built with the pdchaos_mutant tag: the sweep of orphan
// transfer infos (metadata for a room no request owns) never runs. No
// regression names it; the simulator's test builds it to show that its
// exploration finds a bug nobody told it about. The product build is
// always this file: false, and the branch compiles away.
const mutantKeepOrphans = false
