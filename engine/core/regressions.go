package core

import (
	"fmt"
	"slices"
	"strings"
)

// Regression names: known upstream races the engine can put back one by one.
const (
	AbortBeforeStatus    = "abort-before-status"
	StatusResurrection   = "status-resurrection"
	UnknownRoomWaiting   = "unknown-room-waiting"
	BootstrapThreadDeath = "bootstrap-thread-death"
	DecodeAbortLeak      = "decode-abort-leak"
	RankDesync           = "rank-desync"
	FreeBeforeAck        = "free-before-ack"
)

// RegressionInfo documents one regression: what goes wrong and the upstream
// symptom it reproduces.
type RegressionInfo struct {
	Name    string
	Summary string
	Symptom string
}

// Catalogue lists every regression in a fixed order.
func Catalogue() []RegressionInfo {
	return []RegressionInfo{
		{AbortBeforeStatus, "an ABORT for a room prefill has not created yet is dropped; the sender max-merges Bootstrapping over Failed; no bootstrap timeout",
			"prefill room stuck Bootstrapping/WaitingForInput, bootstrap slot pinned (sglang 6.1, fixed by #30352/#34692)"},
		{StatusResurrection, "Failed is not sticky; a transfer worker's later write revives or re-inserts the room",
			"room stuck Transferring after abort, abort lost (sglang 6.2, #24522/#24539/#30352)"},
		{UnknownRoomWaiting, "status of an absent room reads WaitingForInput; a failed transfer clears the room; workers keep processing chunks of cleared rooms",
			"sglang:num_prefill_inflight_queue_reqs pinned forever (sglang 6.3, #35281/#27011)"},
		{BootstrapThreadDeath, "the bootstrap loop checks the guard frame before ABORT and dies on an unguarded ABORT or malformed frame; process and /health stay up",
			"every later request parks in prefill's bootstrap queue; decode transfer queue grows (sglang 6.4, #30352)"},
		{DecodeAbortLeak, "decode abort flips the receiver but leaves the request in the prealloc/transfer queues; no waiting timeout",
			"sglang:num_decode_prealloc_queue_reqs / num_decode_transfer_queue_reqs stuck > 0 (sglang 6.5, #25561)"},
		{RankDesync, "one decode TP rank applies an abort locally at once, so ranks poll lists of different length",
			"the MIN all-reduce never completes; decode hangs (sglang 6.6, #28039/#36928)"},
		{FreeBeforeAck, "decode frees an aborted request's pages at once, while prefill writes are still in flight",
			"a later request reusing the pages gets a corrupted answer (sglang 6.5, #24580/#35049)"},
	}
}

// Names returns every regression name.
func Names() []string {
	var out []string
	for _, r := range Catalogue() {
		out = append(out, r.Name)
	}
	return out
}

// Regressions is the set of regressions switched on. The zero value is the
// fixed engine.
type Regressions map[string]bool

// ParseRegressions validates names and builds a set. An unknown name is an
// error listing the valid ones; nothing is returned half-built.
func ParseRegressions(names []string) (Regressions, error) {
	valid := Names()
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
	for _, n := range Names() {
		if r[n] {
			out = append(out, n)
		}
	}
	return out
}
