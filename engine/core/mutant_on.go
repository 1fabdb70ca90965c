//go:build pdchaos_mutant

package core

// mutantKeepOrphans is on in the pdchaos_mutant test build only (see
// mutant.go): orphan transfer infos are never swept.
const mutantKeepOrphans = true
