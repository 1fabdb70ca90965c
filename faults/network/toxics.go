package network

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/faults"
)

// Stream is the direction a toxic acts on, as Toxiproxy names it.
type Stream string

// Streams. The zero value means Downstream, Toxiproxy's default.
const (
	// Downstream is data from the link's listener (To side) back to the dialer.
	Downstream Stream = "downstream"
	// Upstream is data from the dialer (From side) to the listener.
	Upstream Stream = "upstream"
)

// String returns the Toxiproxy name, defaulting to downstream.
func (s Stream) String() string {
	if s == "" {
		return string(Downstream)
	}
	return string(s)
}

func (s Stream) short() string {
	if s == Upstream {
		return "up,"
	}
	return ""
}

// common is embedded in every network fault: the evidence it has gathered
// over its windows. The injector (Net), the link and the stream are each
// fault's own exported fields, so a fault value reads as its settings.
type common struct {
	rec recorder
}

// recorder sums what the relay saw over a fault's windows.
type recorder struct {
	mu      sync.Mutex
	windows int64
	sum     counts
	cut     int64
}

func (r *recorder) addWindow(c counts, cut int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows++
	r.sum.accepted += c.accepted
	r.sum.closed += c.closed
	r.sum.up += c.up
	r.sum.down += c.down
	r.cut += cut
}

// evidence reports traffic seen during the windows; no traffic means the
// toxic acted on nothing.
func (r *recorder) evidence(name string) faults.Evidence {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	return faults.Evidence{
		Fault:     name,
		Effective: s.accepted > 0 || s.closed > 0 || s.up+s.down > 0,
		Counters: map[string]int64{
			"windows": r.windows, "connections": s.accepted, "connections_closed": s.closed,
			"bytes_upstream": s.up, "bytes_downstream": s.down,
		},
		Detail: "connections and bytes through the link's proxy while the toxic was active",
	}
}

func validate(name string, n *Network, link string, s Stream) error {
	switch {
	case n == nil:
		return fmt.Errorf("inject %s: field Net: no *network.Network", name)
	case link == "":
		return fmt.Errorf("inject %s: field Link: empty", name)
	case s != "" && s != Upstream && s != Downstream:
		return fmt.Errorf("inject %s on link %s: field Stream: %q is not upstream or downstream", name, link, s)
	}
	return nil
}

func fieldErr(name, link, field string, v any, want string) error {
	return fmt.Errorf("inject %s on link %s: field %s: %v %s", name, link, field, v, want)
}

// Latency delays every chunk on a link by Delay (no jitter; draw Delay from a
// seeded rand to vary it). Use by pointer: it records its evidence.
type Latency struct {
	Net    *Network
	Link   string
	Stream Stream
	Delay  time.Duration // at least 1ms; Toxiproxy counts whole milliseconds
	common
}

// Name says what and where, e.g. "latency(kv/0,200ms)".
func (f *Latency) Name() string {
	return fmt.Sprintf("latency(%s,%s%v)", f.Link, f.Stream.short(), f.Delay)
}

// Layer is network.
func (f *Latency) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *Latency) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.Delay < time.Millisecond {
		return fieldErr(f.Name(), f.Link, "Delay", f.Delay, "must be at least 1ms")
	}
	return nil
}

// Inject adds the latency toxic.
func (f *Latency) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addToxic(ctx, t, f.Name(), toxic{f.Link, f.Stream, "latency",
		map[string]any{"latency": f.Delay.Milliseconds(), "jitter": 0}}, &f.rec)
}

// Evidence reports the traffic the toxic delayed.
func (f *Latency) Evidence() faults.Evidence { return f.rec.evidence(f.Name()) }

// Bandwidth throttles a link to RateKB kilobytes per second.
type Bandwidth struct {
	Net    *Network
	Link   string
	Stream Stream
	RateKB int64 // KB/s, > 0
	common
}

// Name says what and where, e.g. "bandwidth(kv/0,64KB/s)".
func (f *Bandwidth) Name() string {
	return fmt.Sprintf("bandwidth(%s,%s%dKB/s)", f.Link, f.Stream.short(), f.RateKB)
}

// Layer is network.
func (f *Bandwidth) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *Bandwidth) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.RateKB <= 0 {
		return fieldErr(f.Name(), f.Link, "RateKB", f.RateKB, "must be > 0")
	}
	return nil
}

// Inject adds the bandwidth toxic.
func (f *Bandwidth) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addToxic(ctx, t, f.Name(), toxic{f.Link, f.Stream, "bandwidth",
		map[string]any{"rate": f.RateKB}}, &f.rec)
}

// Evidence reports the traffic the toxic throttled.
func (f *Bandwidth) Evidence() faults.Evidence { return f.rec.evidence(f.Name()) }

// ResetPeer resets (TCP RST) each connection on the link once data has
// flowed on the stream for After while the fault is active; connections
// opened before the window are reset too, at their next data. The counting
// relay does the reset, not Toxiproxy's reset_peer toxic (which leaks a
// goroutine per reset connection).
type ResetPeer struct {
	Net    *Network
	Link   string
	Stream Stream
	After  time.Duration // >= 0
	common
}

// Name says what and where, e.g. "reset_peer(kv/0,0s)".
func (f *ResetPeer) Name() string {
	return fmt.Sprintf("reset_peer(%s,%s%v)", f.Link, f.Stream.short(), f.After)
}

// Layer is network.
func (f *ResetPeer) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *ResetPeer) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.After < 0 {
		return fieldErr(f.Name(), f.Link, "After", f.After, "must be >= 0")
	}
	return nil
}

// Inject arms the reset on the link's relay.
func (f *ResetPeer) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addReset(ctx, t, f.Name(), f.Link, &resetRule{stream: Stream(f.Stream.String()), after: f.After, since: time.Now()}, &f.rec)
}

// Evidence reports the connections the toxic saw and closed.
func (f *ResetPeer) Evidence() faults.Evidence { return f.rec.evidence(f.Name()) }

// Timeout swallows all data on the stream and closes each connection After
// (0: never closes, data just stops), the black-hole fault.
type Timeout struct {
	Net    *Network
	Link   string
	Stream Stream
	After  time.Duration // >= 0; 0 = hold until healed
	common
}

// Name says what and where, e.g. "timeout(kv/0,0s)".
func (f *Timeout) Name() string {
	return fmt.Sprintf("timeout(%s,%s%v)", f.Link, f.Stream.short(), f.After)
}

// Layer is network.
func (f *Timeout) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *Timeout) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.After < 0 {
		return fieldErr(f.Name(), f.Link, "After", f.After, "must be >= 0")
	}
	return nil
}

// Inject adds the timeout toxic.
func (f *Timeout) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addToxic(ctx, t, f.Name(), toxic{f.Link, f.Stream, "timeout",
		map[string]any{"timeout": f.After.Milliseconds()}}, &f.rec)
}

// Evidence reports the traffic the toxic swallowed.
func (f *Timeout) Evidence() faults.Evidence { return f.rec.evidence(f.Name()) }

// Slicer splits data into AverageSize-byte writes, Delay apart, to exercise
// frame reassembly (no size variation: it would use Toxiproxy's rand).
type Slicer struct {
	Net         *Network
	Link        string
	Stream      Stream
	AverageSize int           // bytes, > 0
	Delay       time.Duration // between slices, >= 0, microsecond resolution
	common
}

// Name says what and where, e.g. "slicer(kv/0,8B,10µs)".
func (f *Slicer) Name() string {
	return fmt.Sprintf("slicer(%s,%s%dB,%v)", f.Link, f.Stream.short(), f.AverageSize, f.Delay)
}

// Layer is network.
func (f *Slicer) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *Slicer) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.AverageSize <= 0 {
		return fieldErr(f.Name(), f.Link, "AverageSize", f.AverageSize, "must be > 0")
	}
	if f.Delay < 0 {
		return fieldErr(f.Name(), f.Link, "Delay", f.Delay, "must be >= 0")
	}
	return nil
}

// Inject adds the slicer toxic.
func (f *Slicer) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addToxic(ctx, t, f.Name(), toxic{f.Link, f.Stream, "slicer", map[string]any{
		"average_size": f.AverageSize, "size_variation": 0, "delay": f.Delay.Microseconds()}}, &f.rec)
}

// Evidence reports the traffic the toxic sliced.
func (f *Slicer) Evidence() faults.Evidence { return f.rec.evidence(f.Name()) }

// LimitData closes each connection once Bytes bytes passed on the stream, to
// cut a stream mid-message.
type LimitData struct {
	Net    *Network
	Link   string
	Stream Stream
	Bytes  int64 // > 0
	common
}

// Name says what and where, e.g. "limit_data(kv/0,4096B)".
func (f *LimitData) Name() string {
	return fmt.Sprintf("limit_data(%s,%s%dB)", f.Link, f.Stream.short(), f.Bytes)
}

// Layer is network.
func (f *LimitData) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *LimitData) Validate() error {
	if err := validate(f.Name(), f.Net, f.Link, f.Stream); err != nil {
		return err
	}
	if f.Bytes <= 0 {
		return fieldErr(f.Name(), f.Link, "Bytes", f.Bytes, "must be > 0")
	}
	return nil
}

// Inject adds the limit_data toxic.
func (f *LimitData) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.addToxic(ctx, t, f.Name(), toxic{f.Link, f.Stream, "limit_data",
		map[string]any{"bytes": f.Bytes}}, &f.rec)
}

// Evidence reports the traffic the toxic limited. Traffic alone does not
// show a cut, so it is effective only once a connection closed while it was
// active.
func (f *LimitData) Evidence() faults.Evidence {
	ev := f.rec.evidence(f.Name())
	ev.Effective = ev.Counters["connections_closed"] > 0
	ev.Detail = "connections closed (cut at the byte limit) and bytes through the link's proxy while the toxic was active"
	return ev
}

// LinkDown takes a link down: the proxy stops, so new dials are refused and
// open connections are cut; heal brings it back on the same address.
type LinkDown struct {
	Net  *Network
	Link string
	common
}

// Name says where, e.g. "down(kv/0)".
func (f *LinkDown) Name() string { return fmt.Sprintf("down(%s)", f.Link) }

// Layer is network.
func (f *LinkDown) Layer() faults.Layer { return faults.LayerNetwork }

// Validate checks the fields without applying anything.
func (f *LinkDown) Validate() error { return validate(f.Name(), f.Net, f.Link, "") }

// Inject stops the link's proxy.
func (f *LinkDown) Inject(ctx context.Context, t faults.Target) (faults.Heal, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.Net.down(ctx, t, f.Name(), f.Link, &f.rec)
}

// Evidence reports the connections cut when the link went down. Refused
// dials cannot be counted (nothing listens), so a down that cut no open
// connection reports Effective false.
func (f *LinkDown) Evidence() faults.Evidence {
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	return faults.Evidence{
		Fault:     f.Name(),
		Effective: f.rec.cut > 0,
		Counters:  map[string]int64{"windows": f.rec.windows, "connections_cut": f.rec.cut},
		Detail:    "open connections cut when the link's proxy stopped",
	}
}

var (
	_ faults.Fault = (*Latency)(nil)
	_ faults.Fault = (*Bandwidth)(nil)
	_ faults.Fault = (*ResetPeer)(nil)
	_ faults.Fault = (*Timeout)(nil)
	_ faults.Fault = (*Slicer)(nil)
	_ faults.Fault = (*LimitData)(nil)
	_ faults.Fault = (*LinkDown)(nil)
)
