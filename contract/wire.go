package contract

import (
	"fmt"
	"strings"
)

// Wire names a dialect of SGLang's decode↔prefill control messages: which
// layout the registration, per-request metadata (TransferInfo), ABORT,
// ABORT_ACK and status notices have. Both sides of one deployment speak the
// same dialect; the frame proxy understands every one.
type Wire string

// Wire dialects.
const (
	// WireNIXL is SGLang's NIXL backend: registration and TransferInfo start
	// with the guard frame "NixlMsgGuard"; a failure notice is
	// KV_STATUS, room, status, rank, reason.
	WireNIXL Wire = "nixl"
	// WireMooncake is SGLang's Mooncake backend: no guard; a registration
	// starts with "None", a TransferInfo with the room; a status notice is
	// room, status, rank (untagged), with an optional reason frame.
	WireMooncake Wire = "mooncake"
)

// SuccessOnControl reports whether a room's success reaches decode as a
// status message on the control plane (Mooncake's conclude pushes it over
// ZMQ, where a full queue or a lost link loses it) rather than with the
// KV writes themselves (NIXL's completion notification follows the
// writes, and prefill learns of it only once decode has them).
func (w Wire) SuccessOnControl() bool { return w == WireMooncake }

// Wires lists every dialect, default first.
func Wires() []Wire { return []Wire{WireNIXL, WireMooncake} }

// ParseWire resolves a dialect name; empty means WireNIXL, the default.
func ParseWire(name string) (Wire, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return WireNIXL, nil
	}
	for _, w := range Wires() {
		if string(w) == name {
			return w, nil
		}
	}
	valid := make([]string, 0, len(Wires()))
	for _, w := range Wires() {
		valid = append(valid, string(w))
	}
	return "", fmt.Errorf("unknown wire dialect %q (valid: %s)", name, strings.Join(valid, ", "))
}
