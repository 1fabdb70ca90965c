package contract

import (
	"fmt"
	"slices"
	"strings"
)

// Regression names: known upstream races the bundled engine can put back one
// by one.
const (
	AbortBeforeStatus    = "abort-before-status"
	StatusResurrection   = "status-resurrection"
	UnknownRoomWaiting   = "unknown-room-waiting"
	BootstrapThreadDeath = "bootstrap-thread-death"
	DecodeAbortLeak      = "decode-abort-leak"
	RankDesync           = "rank-desync"
	FreeBeforeAck        = "free-before-ack"
)

// Regression documents one known race: what goes wrong, the upstream symptom
// it reproduces, and how pdchaos catches it. This table is the one source:
// the CLI's list, the gate, the harness tests, `make repro-NAME` and the
// README's table are generated from it or checked against it.
type Regression struct {
	// Name switches the regression on (--regression NAME).
	Name string
	// Summary says what the engine does wrong with it on.
	Summary string
	// Symptom is what an operator of the upstream engine saw.
	Symptom string
	// Caught names the preset scenario that catches it and the checker
	// that fails. The gate and `make repro-NAME` run exactly this.
	Caught Catch
	// Also are further presets that catch it (the rest of the matrix in
	// shared/GATE.md). The gate asserts each one whose Unreliable is empty.
	Also []Catch
}

// Catch is a preset scenario and the checker that fails in it.
type Catch struct {
	// Scenario is a preset in suites/scenarios.
	Scenario string
	// Checker is one of CheckNames.
	Checker string
	// Wedge says the live watchdog also flags a gauge stuck above 0 before
	// the run ends (the race pins a slot, not only a room or an answer).
	Wedge bool
	// Unreliable, for an extra catch (Regression.Also), says why the gate
	// runs it and reports the outcome but does not assert it: the measured
	// catch rate is too low for a gate. Empty: asserted.
	Unreliable string
}

// Catalogue lists every regression in a fixed order.
func Catalogue() []Regression {
	return []Regression{
		{AbortBeforeStatus,
			"an ABORT for a room prefill has not created yet is dropped; the sender max-merges Bootstrapping over Failed; no bootstrap timeout",
			"prefill room stuck Bootstrapping/WaitingForInput, bootstrap slot pinned (SGLang #30352, #34692)",
			Catch{"abort-overtakes-metadata", CheckRoomsTerminal, true, ""},
			[]Catch{{Scenario: "late-registration", Checker: CheckRoomsTerminal},
				// slots-released catches it by the engine's tables, not a
				// queue gauge: each stuck room keeps a status entry and a
				// transfer info on prefill (table_status_entries and
				// table_transfer_infos above their baseline after the drain;
				// 4 of 4 seeds, 2026-12-01). The bootstrap slot of SGLang
				// #30352 is not pinned here: every cancel is a client's, and
				// prefill's local abort frees it.
				{Scenario: "abort-overtakes-metadata", Checker: CheckSlotsReleased}}},
		{StatusResurrection,
			"Failed is not sticky; a transfer worker's later write revives or re-inserts a cleared room",
			"room stuck Transferring after abort, abort lost (SGLang #24522, #24539, #30352)",
			Catch{"paused-transfer-workers", CheckRoomsTerminal, false, ""},
			[]Catch{{Scenario: "abort-storm", Checker: CheckRoomsTerminal}}},
		{UnknownRoomWaiting,
			"status of an absent room reads WaitingForInput; a failed transfer clears the room; workers keep processing chunks of cleared rooms",
			"sglang:num_prefill_inflight_queue_reqs pinned forever (SGLang #35281, #27011)",
			Catch{"late-registration", CheckRoomsTerminal, true, ""},
			[]Catch{{Scenario: "paused-transfer-workers", Checker: CheckRoomsTerminal}}},
		{BootstrapThreadDeath,
			"the bootstrap loop checks the guard frame before ABORT and dies on an unguarded ABORT or malformed frame; process and /health stay up",
			"every later request parks in prefill's bootstrap queue; decode transfer queue grows (SGLang #30352)",
			Catch{"abort-storm", CheckLiveness, true, ""},
			[]Catch{{Scenario: "kill-all-cascade", Checker: CheckLiveness}}},
		{DecodeAbortLeak,
			"decode abort flips the receiver but leaves the request in the prealloc/transfer queues; no waiting timeout",
			"sglang:num_decode_prealloc_queue_reqs / num_decode_transfer_queue_reqs stuck > 0 (SGLang #25561)",
			Catch{"abort-storm", CheckSlotsReleased, true, ""},
			[]Catch{{Scenario: "kill-all-cascade", Checker: CheckSlotsReleased}}},
		{RankDesync,
			"one decode TP rank applies an abort locally at once, so ranks poll lists of different length",
			"the MIN all-reduce never completes; decode hangs (SGLang #28039, #36928)",
			Catch{"tp2-abort-storm", CheckLiveness, true, ""}, nil},
		{FreeBeforeAck,
			"decode frees an aborted request's pages at once, while prefill writes are still in flight",
			"a later request reusing the pages gets a corrupted answer (SGLang #24580, #35049)",
			Catch{"stale-kv-writes", CheckIntegrity, false, ""},
			[]Catch{{Scenario: "abort-storm", Checker: CheckIntegrity},
				{Scenario: "paused-transfer-workers", Checker: CheckIntegrity}}},
	}
}

// RegressionNames returns every regression name in catalogue order.
func RegressionNames() []string {
	var out []string
	for _, r := range Catalogue() {
		out = append(out, r.Name)
	}
	return out
}

// LookupRegression returns a regression by name.
func LookupRegression(name string) (Regression, bool) {
	for _, r := range Catalogue() {
		if r.Name == name {
			return r, true
		}
	}
	return Regression{}, false
}

// Regressions is the set of regressions switched on. The zero value is the
// fixed engine.
type Regressions map[string]bool

// ParseRegressions validates names and builds a set. An unknown name is an
// error listing the valid ones; nothing is returned half-built.
func ParseRegressions(names []string) (Regressions, error) {
	valid := RegressionNames()
	r := Regressions{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(valid, n) {
			return nil, fmt.Errorf("unknown regression %q (valid: %s)", n, strings.Join(valid, ", "))
		}
		r[n] = true
	}
	return r, nil
}

// On reports whether a regression is switched on.
func (r Regressions) On(name string) bool { return r[name] }

// List returns the switched-on names in catalogue order.
func (r Regressions) List() []string {
	var out []string
	for _, n := range RegressionNames() {
		if r[n] {
			out = append(out, n)
		}
	}
	return out
}
