package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/faults"
)

// Fault is one fault schedule entry in simulated form: a kind of the
// faults/catalog table with its parameters, and its timing (as a scenario
// file writes it: At and For each a range, Every and Count to repeat).
type Fault struct {
	Kind           string
	AtMin, AtMax   time.Duration // first start, drawn in [AtMin, AtMax]
	ForMin, ForMax time.Duration // each window's length, drawn per window
	Every          time.Duration // repeat period from the previous start; 0 once
	Count          int           // windows in all; 0 until the run ends

	// Link is the link a protocol or network fault acts on (control/N, kv/N).
	Link string
	// Stream is the direction a latency, bandwidth, slicer or limit-data
	// fault acts on, as Toxiproxy names it: "upstream" is what the side
	// that dials the link sends (the router's requests, decode's control
	// messages, prefill's notices and KV chunks); anything else is
	// downstream, Toxiproxy's default: the answers (HTTP responses, KV
	// write completions).
	Stream string
	// Kinds are the message kinds it acts on; empty: all.
	Kinds []string
	// Min and Max bound a delay-messages delay; Delay is latency's.
	Min, Max, Delay time.Duration
	// KeepOrder delays everything behind a delayed message.
	KeepOrder bool
	// MaxHold and AfterMessages release a held message.
	MaxHold       time.Duration
	AfterMessages int
	// Limit bounds drops or duplicates per window; 0: all.
	Limit int
	// DropPct, ReorderPct and DelayPct are kv-chunks' shares of chunks
	// dropped (the write's completion fails), held until AfterChunks
	// later chunks passed (or MaxHold), and delayed by [MinDelay,
	// MaxDelay]; one draw per chunk, as the live relay makes.
	DropPct, ReorderPct, DelayPct int
	AfterChunks                   int
	MinDelay, MaxDelay            time.Duration
	// Mode is corrupt-messages' (protocol.CorruptModes; empty: garble).
	Mode string
	// Role, Rank and Worker pick the actors an engine or process fault
	// stops; Rank and Worker -1 mean all.
	Role         string
	Rank, Worker int
	// Restart is sigkill's: the process comes back at once (after its
	// start-up time) instead of at heal.
	Restart bool
	// RateKB is bandwidth's rate (KB/s per connection); Bytes is
	// limit-data's budget per connection; AverageSize is slicer's slice
	// (its pause between slices is Delay).
	RateKB, Bytes, AverageSize int
}

// Modelled lists the fault kinds the simulator carries out. A scenario
// naming another kind runs without it, and the run reports it skipped.
func Modelled() []string {
	return []string{"pause-transfer-workers", "pause-transfer-writes", "stall-bootstrap-loop", "stall-scheduler",
		"delay-messages", "abort-before-metadata", "hold-messages", "drop-messages", "duplicate-messages",
		"latency", "reset-peer", "link-down", "timeout", "bandwidth", "slicer", "limit-data", "sigstop", "sigkill", "kv-chunks", "corrupt-messages"}
}

// layerOf is the catalogue layer of a modelled kind, for fault records.
func layerOf(kind string) faults.Layer {
	switch kind {
	case "pause-transfer-workers", "pause-transfer-writes", "stall-bootstrap-loop", "stall-scheduler":
		return faults.LayerEngine
	case "latency", "reset-peer", "link-down", "timeout", "bandwidth", "slicer", "limit-data":
		return faults.LayerNetwork
	case "sigstop", "sigkill":
		return faults.LayerProcess
	}
	return faults.LayerProtocol
}

func (f Fault) validate() error {
	switch {
	case !slices.Contains(Modelled(), f.Kind):
		return fmt.Errorf("fault kind %q is not simulated (simulated: %s)", f.Kind, strings.Join(Modelled(), ", "))
	case f.Kind == "sigkill" && f.Role != "decode" && f.Role != "prefill":
		return fmt.Errorf("fault sigkill: role %q: only prefill's and decode's processes are killed in the simulator", f.Role)
	case f.ForMin <= 0:
		return fmt.Errorf("fault %s: for %v must be > 0", f.Kind, f.ForMin)
	case f.Every > 0 && f.Every <= max(f.ForMin, f.ForMax):
		return fmt.Errorf("fault %s: every %v must exceed for", f.Kind, f.Every)
	}
	if isLinkKind(f.Kind) && f.Link == "" {
		return fmt.Errorf("fault %s: link is required", f.Kind)
	}
	switch {
	case f.Kind == "bandwidth" && f.RateKB <= 0:
		return fmt.Errorf("fault bandwidth: rate %d KB/s must be > 0", f.RateKB)
	case f.Kind == "limit-data" && f.Bytes <= 0:
		return fmt.Errorf("fault limit-data: bytes %d must be > 0", f.Bytes)
	case f.Kind == "slicer" && f.AverageSize <= 0:
		return fmt.Errorf("fault slicer: average_size %d must be > 0", f.AverageSize)
	}
	return nil
}

func isLinkKind(k string) bool {
	return layerOf(k) != faults.LayerProcess && layerOf(k) != faults.LayerEngine
}

// window is one planned application of a fault, offsets from run start.
type window struct {
	id         int
	f          Fault
	start, end time.Duration
	active     bool
	affected   int64 // messages or actor steps it changed: its evidence
	used       int   // drops or duplicates spent against Limit
	held       []*held
	healed     time.Duration
	// sent counts limit-data's bytes per connection since the window
	// opened; a connection it closed starts again from zero.
	sent map[string]int
}

func (wn *window) name() string {
	switch {
	case wn.f.Kind == "corrupt-messages":
		return faults.CorruptName(wn.f.Link, wn.f.Kinds, wn.f.Mode) // as the live fault names itself, which integrity reads
	case wn.f.Kind == "duplicate-messages":
		return faults.DuplicateName(wn.f.Link, wn.f.Kinds) // as the live fault names itself: timeouts-explained reads it
	case wn.f.Link != "":
		return wn.f.Kind + "@" + wn.f.Link
	case wn.f.Kind == "sigstop" && wn.f.Role != "":
		return faults.StopName(wn.f.Role) // as the live process fault names itself
	case wn.f.Kind == "sigkill":
		return faults.KillName(wn.f.Role, wn.f.Restart)
	case wn.f.Kind == "stall-scheduler":
		return (&faults.StallScheduler{Role: wn.f.Role, Rank: wn.f.Rank}).Name() // as the live engine fault names itself
	case wn.f.Kind == "stall-bootstrap-loop":
		return (&faults.StallBootstrapLoop{Rank: wn.f.Rank}).Name()
	}
	return wn.f.Kind
}

// plan resolves the schedule as faults/schedule.Plan does: At drawn once
// per entry, For once per window, repeats every Every, Count windows (0:
// until runLength), windows starting at or after runLength dropped and
// ends clipped. Offsets are from the end of warm-up (base).
func (w *world) plan(fs []Fault, base, runLength time.Duration) []*window {
	var out []*window
	for _, f := range fs {
		start := w.between(f.AtMin, max(f.AtMin, f.AtMax))
		for k := 0; start < runLength && (f.Count == 0 || k < f.Count); k++ {
			end := min(start+w.between(f.ForMin, max(f.ForMin, f.ForMax)), runLength)
			out = append(out, &window{f: f, start: base + start, end: base + end})
			if f.Every == 0 {
				break
			}
			start += f.Every
		}
	}
	slices.SortStableFunc(out, func(a, b *window) int { return int(a.start - b.start) })
	for i, wn := range out {
		wn.id = i
	}
	return out
}

// matchesKind reports whether a window acting on message kinds takes kind.
func (wn *window) matchesKind(kind string) bool {
	return len(wn.f.Kinds) == 0 || slices.Contains(wn.f.Kinds, kind)
}

// stops reports whether an engine or process window stops the actor of
// role, rank and worker (-1: the actor has no worker index).
func (wn *window) stops(kind, role string, rank, worker int) bool {
	if !wn.active {
		return false
	}
	if wn.f.Kind == "sigstop" {
		return wn.f.Role == role
	}
	if wn.f.Kind != kind {
		return false
	}
	r := wn.f.Role
	if r == "" {
		r = "prefill"
	}
	if kind == "stall-bootstrap-loop" {
		r = "prefill"
	}
	return r == role && (wn.f.Rank < 0 || wn.f.Rank == rank) && (worker < 0 || wn.f.Worker < 0 || wn.f.Worker == worker)
}
