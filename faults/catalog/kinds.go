package catalog

import (
	"math/rand/v2"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/kvlink"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/faults/protocol"
)

// Kinds returns the table of fault kinds, by layer from the engine out. It
// is built on each call: callers may keep or change what they get.
func Kinds() []Kind {
	return []Kind{
		// Engine hooks.
		{Name: "pause-transfer-workers", Layer: faults.LayerEngine,
			Doc:     "close the gate of prefill transfer workers, holding chunks they dequeued while aborts race them",
			Params:  []Param{engineRole(false), rank(), worker()},
			Example: map[string]any{"worker": 0},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &faults.PauseTransferWorkers{Role: v.String("role"), Rank: v.Int("rank"), Worker: v.Int("worker")}, nil
			}},
		{Name: "pause-transfer-writes", Layer: faults.LayerEngine,
			Doc:     "hold transfer workers with a KV write already posted: it lands on resume even if the room was aborted",
			Params:  []Param{engineRole(false), rank(), worker()},
			Example: map[string]any{"worker": 1},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &faults.PauseTransferWorkers{Role: v.String("role"), Rank: v.Int("rank"), Worker: v.Int("worker"), InFlight: true}, nil
			}},
		{Name: "stall-bootstrap-loop", Layer: faults.LayerEngine,
			Doc:     "stop prefill's bootstrap loop: registrations, metadata and ABORTs wait unread",
			Params:  []Param{rank()},
			Example: map[string]any{"rank": 0},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &faults.StallBootstrapLoop{Rank: v.Int("rank")}, nil
			}},
		{Name: "stall-scheduler", Layer: faults.LayerEngine,
			Doc:     "stop a role's scheduler loop: queues stop moving while requests and aborts arrive",
			Params:  []Param{engineRole(true), rank()},
			Example: map[string]any{"role": "decode"},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &faults.StallScheduler{Role: v.String("role"), Rank: v.Int("rank")}, nil
			}},

		// Protocol: the ZMTP frame proxy.
		{Name: "delay-messages", Layer: faults.LayerProtocol,
			Doc: "delay matching control messages by a duration drawn from [min, max]",
			Params: []Param{controlLink(), msgKinds(),
				{Name: "min", Type: TypeDuration, Min: "0s", Doc: "shortest delay"},
				{Name: "max", Type: TypeDuration, Required: true, Min: "0s", MinExclusive: true, Doc: "longest delay (>= min)"},
				{Name: "keep_order", Type: TypeBool, Doc: "delay everything behind a delayed message (a slow link) instead of letting later ones overtake"}},
			Example: map[string]any{"link": "control/0", "kinds": []any{"registration"}, "min": "50ms", "max": "500ms"},
			Check: func(v Values) error {
				if v.Duration("max") < v.Duration("min") {
					return v.errorf("max", "%v is below min %v", v.Duration("max"), v.Duration("min"))
				}
				return nil
			},
			Build: func(v Values, env Env) (faults.Fault, error) {
				if env.Rand == nil {
					return nil, ErrNoRand
				}
				return &protocol.DelayMessages{Link: v.String("link"), Kinds: protoKinds(v.Strings("kinds")),
					Min: v.Duration("min"), Max: v.Duration("max"), KeepOrder: v.Bool("keep_order"),
					Rand: rand.New(rand.NewPCG(env.Rand.Uint64(), env.Rand.Uint64()))}, nil
			}},
		{Name: "abort-before-metadata", Layer: faults.LayerProtocol,
			Doc: "hold each room's metadata until its ABORT has passed, so prefill sees the ABORT first",
			Params: []Param{controlLink(),
				{Name: "max_hold", Type: TypeDuration, Min: "0s", Doc: "let metadata of rooms never aborted through after this long; 0 holds until heal"}},
			Example: map[string]any{"link": "control/0", "max_hold": "1s"},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &protocol.AbortBeforeMetadata{Link: v.String("link"), MaxHold: v.Duration("max_hold")}, nil
			}},
		{Name: "hold-messages", Layer: faults.LayerProtocol,
			Doc: "hold each matching message until after_messages later ones passed or max_hold elapsed (a reorder)",
			Params: []Param{controlLink(), msgKinds(),
				{Name: "after_messages", Type: TypeInt, Min: "0", Doc: "release after this many later messages; 0: only max_hold"},
				{Name: "max_hold", Type: TypeDuration, Min: "0s", Doc: "release after this long; 0: only after_messages"}},
			Example: map[string]any{"link": "control/0", "kinds": []any{"abort"}, "after_messages": 2},
			Check: func(v Values) error {
				if v.Int("after_messages") <= 0 && v.Duration("max_hold") <= 0 {
					return v.errorf("after_messages", "need after_messages > 0 or max_hold > 0")
				}
				return nil
			},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &protocol.HoldMessages{Link: v.String("link"), Kinds: protoKinds(v.Strings("kinds")),
					After: v.Int("after_messages"), MaxHold: v.Duration("max_hold")}, nil
			}},
		{Name: "drop-messages", Layer: faults.LayerProtocol,
			Doc:     "discard matching control messages, like a PUSH socket losing its queue",
			Params:  []Param{controlLink(), msgKinds(), limit("drop at most this many; 0: all")},
			Example: map[string]any{"link": "control/0", "kinds": []any{"abort"}, "limit": 3},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &protocol.Drop{Link: v.String("link"), Kinds: protoKinds(v.Strings("kinds")), Limit: v.Int("limit")}, nil
			}},
		{Name: "duplicate-messages", Layer: faults.LayerProtocol,
			Doc:     "forward matching control messages twice",
			Params:  []Param{controlLink(), msgKinds(), limit("duplicate at most this many; 0: all")},
			Example: map[string]any{"link": "control/0", "kinds": []any{"registration"}},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &protocol.Duplicate{Link: v.String("link"), Kinds: protoKinds(v.Strings("kinds")), Limit: v.Int("limit")}, nil
			}},

		{Name: "corrupt-messages", Layer: faults.LayerProtocol,
			Doc: "forward matching control messages corrupted (a number frame garbled, or the last frame cut off), so the receiver must refuse them and deadlines end the rooms they would have moved",
			Params: []Param{controlLink(), msgKinds(), limit("corrupt at most this many; 0: all"),
				{Name: "mode", Type: TypeString, Default: faults.CorruptGarble, Enum: faults.CorruptModes(),
					Doc: "garble: every all-digit frame (room, port) made not a number; truncate: the last frame cut off"}},
			Example: map[string]any{"link": "control/0", "kinds": []any{"metadata", "abort"}, "limit": 5, "mode": "garble"},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &protocol.Corrupt{Link: v.String("link"), Kinds: protoKinds(v.Strings("kinds")), Limit: v.Int("limit"), Mode: v.String("mode")}, nil
			}},

		// Protocol: the KV frame relay.
		{Name: "kv-chunks", Layer: faults.LayerProtocol,
			Doc: "delay, reorder or drop individual KV chunks on a KV link, as multi-rail RDMA writes complete out of order (within a room when the engine posts several writes: kv_posted_writes)",
			Params: []Param{
				{Name: "link", Type: TypeString, Required: true, Doc: "KV link, e.g. " + contract.KVLink(0)},
				pct("drop_pct", "percent of chunks dropped: not forwarded, the connection closed, so the write completion fails"),
				pct("reorder_pct", "percent of chunks held until after_chunks later chunks were applied, or max_hold"),
				{Name: "after_chunks", Type: TypeInt, Default: "1", Min: "1", Doc: "later chunks that must overtake a held one"},
				{Name: "max_hold", Type: TypeDuration, Default: "500ms", Min: "0s", MinExclusive: true, Doc: "longest reorder hold"},
				pct("delay_pct", "percent of chunks delayed by a duration drawn from [min_delay, max_delay]"),
				{Name: "min_delay", Type: TypeDuration, Min: "0s", Doc: "shortest delay"},
				{Name: "max_delay", Type: TypeDuration, Min: "0s", Doc: "longest delay (>= min_delay; > 0 when delay_pct > 0)"}},
			Example: map[string]any{"link": "kv/0", "reorder_pct": 30, "delay_pct": 20, "max_delay": "50ms", "drop_pct": 1},
			Check: func(v Values) error {
				sum := v.Int("drop_pct") + v.Int("reorder_pct") + v.Int("delay_pct")
				switch {
				case sum == 0:
					return v.errorf("reorder_pct", "drop_pct, reorder_pct and delay_pct are all 0: the fault would do nothing")
				case sum > 100:
					return v.errorf("delay_pct", "drop_pct + reorder_pct + delay_pct = %d is over 100", sum)
				case v.Duration("max_delay") < v.Duration("min_delay"):
					return v.errorf("max_delay", "%v is below min_delay %v", v.Duration("max_delay"), v.Duration("min_delay"))
				case v.Int("delay_pct") > 0 && v.Duration("max_delay") <= 0:
					return v.errorf("max_delay", "must be > 0 when delay_pct is %d", v.Int("delay_pct"))
				}
				return nil
			},
			Build: func(v Values, env Env) (faults.Fault, error) {
				if env.Rand == nil {
					return nil, ErrNoRand
				}
				return &kvlink.Chunks{Link: v.String("link"), Rand: rand.New(rand.NewPCG(env.Rand.Uint64(), env.Rand.Uint64())),
					Rules: kvlink.Rules{DropPct: v.Int("drop_pct"), ReorderPct: v.Int("reorder_pct"), AfterChunks: v.Int("after_chunks"),
						MaxHold: v.Duration("max_hold"), DelayPct: v.Int("delay_pct"), MinDelay: v.Duration("min_delay"), MaxDelay: v.Duration("max_delay")}}, nil
			}},

		// Network: embedded Toxiproxy on a link.
		{Name: "latency", Layer: faults.LayerNetwork,
			Doc: "delay every chunk on a link (no jitter)",
			Params: []Param{netLink(), stream(),
				{Name: "delay", Type: TypeDuration, Required: true, Min: "1ms", Doc: "added delay; Toxiproxy counts whole milliseconds"}},
			Example: map[string]any{"link": "kv/0", "delay": "200ms"},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.Latency{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")), Delay: v.Duration("delay")}, nil
			}},
		{Name: "bandwidth", Layer: faults.LayerNetwork,
			Doc: "throttle a link to a rate",
			Params: []Param{netLink(), stream(),
				{Name: "rate", Type: TypeInt, Required: true, Min: "0", MinExclusive: true, Doc: "KB/s"}},
			Example: map[string]any{"link": "kv/0", "stream": "upstream", "rate": 64},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.Bandwidth{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")), RateKB: int64(v.Int("rate"))}, nil
			}},
		{Name: "slicer", Layer: faults.LayerNetwork,
			Doc: "split data into small writes, to exercise frame reassembly (no size variation)",
			Params: []Param{netLink(), stream(),
				{Name: "average_size", Type: TypeInt, Required: true, Min: "0", MinExclusive: true, Doc: "bytes per slice"},
				{Name: "delay", Type: TypeDuration, Min: "0s", Doc: "pause between slices, microsecond resolution"}},
			Example: map[string]any{"link": "kv/0", "stream": "upstream", "average_size": 7, "delay": "50us"},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.Slicer{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")),
					AverageSize: v.Int("average_size"), Delay: v.Duration("delay")}, nil
			}},
		{Name: "limit-data", Layer: faults.LayerNetwork,
			Doc: "close each connection once a number of bytes passed, cutting a stream mid-message",
			Params: []Param{netLink(), stream(),
				{Name: "bytes", Type: TypeInt, Required: true, Min: "0", MinExclusive: true, Doc: "bytes let through per connection"}},
			Example: map[string]any{"link": "kv/0", "stream": "upstream", "bytes": 4096},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.LimitData{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")), Bytes: int64(v.Int("bytes"))}, nil
			}},
		{Name: "reset-peer", Layer: faults.LayerNetwork,
			Doc: "reset (TCP RST) each connection after its first data on the stream",
			Params: []Param{netLink(), stream(),
				{Name: "after", Type: TypeDuration, Min: "0s", Doc: "time from a connection's first data to its reset"}},
			Example: map[string]any{"link": "control/0"},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.ResetPeer{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")), After: v.Duration("after")}, nil
			}},
		{Name: "timeout", Layer: faults.LayerNetwork,
			Doc: "swallow all data on the stream (a black hole), closing connections after a while",
			Params: []Param{netLink(), stream(),
				{Name: "after", Type: TypeDuration, Min: "0s", Doc: "close each connection after this long; 0: hold until heal"}},
			Example: map[string]any{"link": "kv/0", "after": "2s"},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.Timeout{Net: env.Net, Link: v.String("link"), Stream: network.Stream(v.String("stream")), After: v.Duration("after")}, nil
			}},
		{Name: "link-down", Layer: faults.LayerNetwork,
			Doc:     "take a link down: dials are refused and open connections cut until heal",
			Params:  []Param{netLink()},
			Example: map[string]any{"link": "router-decode"},
			Build: func(v Values, env Env) (faults.Fault, error) {
				return &network.LinkDown{Net: env.Net, Link: v.String("link")}, nil
			}},

		// Process: signals to role processes.
		{Name: "sigstop", Layer: faults.LayerProcess,
			Doc:     "freeze a role process with SIGSTOP; heal sends SIGCONT",
			Params:  []Param{procRole()},
			Example: map[string]any{"role": "prefill"},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &process.Stop{Role: v.String("role")}, nil
			}},
		{Name: "sigkill", Layer: faults.LayerProcess,
			Doc: "crash a role process with SIGKILL; restarted at once (restart) or at heal",
			Params: []Param{procRole(),
				{Name: "restart", Type: TypeBool, Doc: "restart at once inside the window (a crash-restart blip) instead of at heal"}},
			Example: map[string]any{"role": "decode", "restart": true},
			Build: func(v Values, _ Env) (faults.Fault, error) {
				return &process.Kill{Role: v.String("role"), Restart: v.Bool("restart")}, nil
			}},
	}
}

// The shared parameters, as functions: the table is values, not state.

func engineRole(required bool) Param {
	p := Param{Name: "role", Type: TypeString, Enum: []string{"prefill", "decode"}, Doc: "role whose actors stop"}
	if required {
		p.Required = true
	} else {
		p.Default = "prefill"
	}
	return p
}

func rank() Param {
	return Param{Name: "rank", Type: TypeInt, Default: "-1", Min: "-1", Doc: "rank; -1: every rank"}
}

func worker() Param {
	return Param{Name: "worker", Type: TypeInt, Default: "-1", Min: "-1", Doc: "transfer worker; -1: every worker"}
}

func controlLink() Param {
	return Param{Name: "link", Type: TypeString, Required: true,
		Doc: "ZMTP control link, e.g. " + contract.ControlLink(0)}
}

func msgKinds() Param {
	enum := make([]string, len(protocol.Kinds))
	for i, k := range protocol.Kinds {
		enum[i] = string(k)
	}
	return Param{Name: "kinds", Type: TypeStrings, Enum: enum, Doc: "message kinds it acts on; empty: all"}
}

func pct(name, doc string) Param {
	return Param{Name: name, Type: TypeInt, Min: "0", Max: "100", Doc: doc}
}

func limit(doc string) Param {
	return Param{Name: "limit", Type: TypeInt, Min: "0", Doc: doc}
}

func netLink() Param {
	return Param{Name: "link", Type: TypeString, Required: true,
		Doc: "link name, e.g. " + contract.KVLink(0) + ", " + contract.ControlLink(0) + ", " + contract.LinkBootstrap + ", " +
			contract.LinkRouterPrefill + ", " + contract.LinkRouterDecode}
}

func stream() Param {
	return Param{Name: "stream", Type: TypeString, Default: string(network.Downstream),
		Enum: []string{string(network.Upstream), string(network.Downstream)},
		Doc:  "direction: upstream (dialer to listener) or downstream"}
}

func procRole() Param {
	return Param{Name: "role", Type: TypeString, Required: true, Enum: []string{"router", "prefill", "decode"}, Doc: "role process to signal"}
}

func protoKinds(ks []string) []protocol.Kind {
	if len(ks) == 0 {
		return nil
	}
	out := make([]protocol.Kind, len(ks))
	for i, k := range ks {
		out[i] = protocol.Kind(k)
	}
	return out
}
