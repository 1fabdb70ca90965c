package contract

import (
	"context"
	"errors"
	"fmt"
)

// LinkKind says what a link carries, so a fault can refuse a link it cannot
// act on (a frame proxy needs ZMTP, not HTTP).
type LinkKind string

// Link kinds.
const (
	// LinkHTTP carries HTTP: client→router, router→prefill, router→decode,
	// decode→prefill bootstrap (/route).
	LinkHTTP LinkKind = "http"
	// LinkZMTP carries ZMTP 3.x PUSH→PULL: decode→prefill control messages.
	LinkZMTP LinkKind = "zmtp"
	// LinkKV carries the prefill→decode KV chunk stream.
	LinkKV LinkKind = "kv"
)

// Link names a deployment offers. Per-rank links are named by ControlLink,
// NotifyLink and KVLink.
const (
	LinkClientRouter  = "client-router"
	LinkRouterPrefill = "router-prefill"
	LinkRouterDecode  = "router-decode"
	LinkBootstrap     = "bootstrap"
)

// ControlLink names the decode→prefill control link of a prefill rank.
func ControlLink(rank int) string { return fmt.Sprintf("control/%d", rank) }

// NotifyLink names the prefill→decode notify link of a decode rank: the
// statuses and ABORT_ACKs prefill sends back.
func NotifyLink(rank int) string { return fmt.Sprintf("notify/%d", rank) }

// IsNotifyLink reports whether name is a NotifyLink of some rank.
func IsNotifyLink(name string) bool {
	var rank int
	n, err := fmt.Sscanf(name, "notify/%d", &rank)
	return err == nil && n == 1 && name == NotifyLink(rank)
}

// IsControlLink reports whether name is a ControlLink of some rank.
func IsControlLink(name string) bool {
	var rank int
	n, err := fmt.Sscanf(name, "control/%d", &rank)
	return err == nil && n == 1 && name == ControlLink(rank)
}

// KVLink names the prefill→decode KV link of a decode rank.
func KVLink(rank int) string { return fmt.Sprintf("kv/%d", rank) }

// Link is one named TCP hop between two parties of a deployment. A proxy
// sits in front of it by listening somewhere and forwarding to Addr, after
// the target has been told (Interpose) to send new connections to the proxy.
type Link struct {
	// Name identifies the link: LinkClientRouter, LinkRouterPrefill, LinkRouterDecode,
	// LinkBootstrap, ControlLink(rank), KVLink(rank).
	Name string `json:"name"`
	// From and To are the roles at each end ("client", "router", "prefill", "decode").
	From string `json:"from"`
	To   string `json:"to"`
	// Kind is what the link carries.
	Kind LinkKind `json:"kind"`
	// Addr is the host:port the To side listens on.
	Addr string `json:"addr"`
}

// Restore undoes an Interpose: new connections go straight to the link's
// address again and connections made through the proxy are dropped.
type Restore func(ctx context.Context) error

// ErrUnsupported is returned (wrapped, naming what is missing) when a target
// cannot do something a fault or check asks: no such link, no hooks, no
// process control.
var ErrUnsupported = errors.New("unsupported by target")

// Processes controls the role processes of a target.
type Processes interface {
	// Roles lists the roles that run as processes ("router", "prefill", "decode").
	Roles() []string
	// PID returns the current process id of a role.
	PID(role string) (int, error)
	// Restart starts a role again after it was killed, with the same
	// addresses, and returns once it serves.
	Restart(ctx context.Context, role string) error
}

// RunLabelFlag is the `pdchaos engine` flag that marks a role process with
// the run that started it: "pdchaos-<harness pid>-<n>". `pdchaos faults
// reset --leftovers` finds processes whose harness is gone by it.
const RunLabelFlag = "run-label"

// EngineConfigFlag is the `pdchaos engine` flag that carries a whole
// EngineConfig as JSON: how the harness starts role processes, so no
// setting of a scenario is lost on the way.
const EngineConfigFlag = "engine-config"

// ClockStepFlag is the `pdchaos engine` flag that gives a role process how
// far the host's wall clock has stepped since the harness's run began (a
// duration; zero or absent: none). The role's clock starts that much
// behind the host's and then follows the monotonic clock, so its room
// events sit on the run's time line even when the role was restarted after
// an NTP step or a resumed VM moved the wall clock.
const ClockStepFlag = "clock-step"
