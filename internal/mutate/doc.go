// Package mutate is the gate's mutation self-test: it breaks one code
// probe's failure-handling branch at a time in a scratch copy of the module
// and runs the preset scenarios that reach that probe against the broken
// engine, so that we measure which broken branches the gate catches and by
// which checker.
//
// Product code is never changed: every mutant lives in a copy under a
// temporary directory. A mutant keeps its probe's Hit, so the run still
// counts the probe and "not reached" can be told from "missed".
//
// It imports the standard library only (and runs the go tool and the
// copy's pdchaos binary as processes); it must not import the engine, the
// harness or anything under suites.
package mutate
