// Package gate is pdchaos's pre-release gate, a Ginkgo suite (run it with
// `make gate`; `make test` leaves it out to keep CI inside its budget).
// Every embedded preset scenario must pass on the fixed engine with every
// checker pass or skip, and every regression in contract.Catalogue() must be
// caught by the scenario the catalogue names, failing the checker it names.
// A preset without gate labels fails the suite, naming it.
//
// Specs run one at a time (Serial): the harness's no-leaks checker counts
// every goroutine of the test process. Each spec writes its runs under
// $PDCHAOS_RESULTS_DIR/gate/ and keeps them only when it fails; key figures
// go to the JUnit report as properties. The package holds only tests; it
// may import harness, engine and suites/labels, and nothing may import it.
package gate
