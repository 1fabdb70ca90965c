// Package outcome is the record of how one client request ended, as the
// agents write it and the harness stores and checks it in events.jsonl:
// completed, cancelled (with phase and reason), error or hung.
//
// It is a leaf: it imports only the standard library, so the pure checkers
// (harness/check) can read outcomes without pulling in the agents' runtime,
// the engine's model or vegeta.
package outcome
