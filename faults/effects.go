package faults

import (
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

// Effect is one thing a fault can do to the engine while it is on. The
// checkers excuse a late, missing or extra event only by a fault able to
// cause it, so what each kind can do is written once, in effectRows, and
// read back from a fault record's name (ReadName). What a fault on a link
// can do follows from its layer and its link, not its kind, and is not in
// the table.
type Effect uint8

const (
	// StopsDeadlines: the loop that enforces a role's deadlines stops
	// (its process stopped or killed, its scheduler stalled), so its rooms
	// may overrun them.
	StopsDeadlines Effect = 1 << iota
	// HoldsPostedWrites: a KV write already under way is held and lands
	// later (a stopped process reads or writes its socket late; workers
	// paused with their writes posted). Workers paused before sending and
	// a stalled bootstrap loop hold none.
	HoldsPostedWrites
	// HoldsMetadata: decode's TransferInfo or prefill's answer to it waits
	// (prefill's bootstrap loop or a scheduler stalled, a process stopped
	// or killed).
	HoldsMetadata
	// EndsProcess: the role's process is killed, and what it held is gone.
	EndsProcess
)

// effectRow is what one engine or process fault kind can do.
type effectRow struct {
	kind    string
	layer   Layer
	effects Effect
}

// effectRows is the table: every engine and process kind of the catalogue
// and of the simulator has a row (a test says so).
func effectRows() []effectRow {
	return []effectRow{
		{"sigstop", LayerProcess, StopsDeadlines | HoldsPostedWrites | HoldsMetadata},
		{"sigkill", LayerProcess, StopsDeadlines | HoldsPostedWrites | HoldsMetadata | EndsProcess},
		{"stall-scheduler", LayerEngine, StopsDeadlines | HoldsPostedWrites | HoldsMetadata},
		{"stall-bootstrap-loop", LayerEngine, HoldsMetadata},
		{"pause-transfer-writes", LayerEngine, HoldsPostedWrites},
		{"pause-transfer-workers", LayerEngine, 0},
	}
}

// EffectKinds lists the kinds the table has a row for, by layer.
func EffectKinds() map[string]Layer {
	out := map[string]Layer{}
	for _, r := range effectRows() {
		out[r.kind] = r.layer
	}
	return out
}

// Named is a fault record's name read back: its kind and where it acts.
type Named struct {
	// Kind is the name up to its arguments: "stall-scheduler",
	// "sigkill", "drop", "latency".
	Kind string
	// Role is the role the first argument names ("decode" in
	// "stall-scheduler(decode/0)"), or "".
	Role string
	// Link is the link the first argument names live ("notify/0" in
	// "drop(notify/0,status)", "router-prefill" in
	// "latency(router-prefill,1.5s)") or that follows the @ in the
	// simulator ("drop-messages@notify/0"); "" when it names none (then
	// it may act on any).
	Link string
}

// ReadName reads a fault's name as the live faults and the simulator write
// it (KIND(ARG,...) or KIND@LINK).
func ReadName(name string) Named {
	var n Named
	var arg string
	if kind, link, ok := strings.Cut(name, "@"); ok {
		n.Kind, arg = kind, link
	} else if kind, args, ok := strings.Cut(name, "("); ok {
		n.Kind = kind
		arg, _, _ = strings.Cut(strings.TrimSuffix(args, ")"), ",")
	} else {
		n.Kind = name
	}
	role, _, _ := strings.Cut(arg, "/")
	switch role {
	case contract.SidePrefill, contract.SideDecode, contract.SideRouter:
		n.Role = role
	case contract.LinkClientRouter, contract.LinkRouterPrefill, contract.LinkRouterDecode, contract.LinkBootstrap:
		n.Link = arg // the deployment's links with no rank
	default:
		if strings.Contains(arg, "/") {
			n.Link = arg
		}
	}
	return n
}

// Can reports whether a fault of this kind has effect e. A kind with no
// row has none: a new engine or process fault excuses nothing until its
// row says what it does.
func (n Named) Can(e Effect) bool {
	for _, r := range effectRows() {
		if r.kind == n.Kind {
			return r.effects&e != 0
		}
	}
	return false
}
