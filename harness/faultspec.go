package harness

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/faults/protocol"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// FaultSpec is one fault schedule entry in a scenario file: which fault
// (Kind and its parameters) and when (At and For, each "2s" or "2s-5s";
// Every and Count to repeat). At is measured from the end of warm-up.
type FaultSpec struct {
	Kind  string         `yaml:"kind" json:"kind"`
	At    schedule.Range `yaml:"at,omitempty" json:"at"`
	For   schedule.Range `yaml:"for" json:"for"`
	Every time.Duration  `yaml:"every,omitempty" json:"every,omitempty"`
	Count int            `yaml:"count,omitempty" json:"count,omitempty"`

	Link      string        `yaml:"link,omitempty" json:"link,omitempty"`
	Stream    string        `yaml:"stream,omitempty" json:"stream,omitempty"`
	Role      string        `yaml:"role,omitempty" json:"role,omitempty"`
	Rank      *int          `yaml:"rank,omitempty" json:"rank,omitempty"`
	Worker    *int          `yaml:"worker,omitempty" json:"worker,omitempty"`
	Kinds     []string      `yaml:"kinds,omitempty" json:"kinds,omitempty"`
	Min       time.Duration `yaml:"min,omitempty" json:"min,omitempty"`
	Max       time.Duration `yaml:"max,omitempty" json:"max,omitempty"`
	Delay     time.Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	After     time.Duration `yaml:"after,omitempty" json:"after,omitempty"`
	AfterMsgs int           `yaml:"after_messages,omitempty" json:"after_messages,omitempty"`
	MaxHold   time.Duration `yaml:"max_hold,omitempty" json:"max_hold,omitempty"`
	Limit     int           `yaml:"limit,omitempty" json:"limit,omitempty"`
	KeepOrder bool          `yaml:"keep_order,omitempty" json:"keep_order,omitempty"`
	Restart   bool          `yaml:"restart,omitempty" json:"restart,omitempty"`
}

// faultKind describes one fault kind: its layer and the parameters it takes.
type faultKind struct {
	layer  faults.Layer
	params []string // yaml names beyond kind/at/for/every/count
}

// FaultKinds is the catalogue of scenario fault kinds, built on each call
// (no package state).
func FaultKinds() map[string]faultKind {
	return map[string]faultKind{
		"pause-transfer-workers": {faults.LayerEngine, []string{"role", "rank", "worker"}},
		"pause-transfer-writes":  {faults.LayerEngine, []string{"role", "rank", "worker"}},
		"stall-bootstrap-loop":   {faults.LayerEngine, []string{"rank"}},
		"stall-scheduler":        {faults.LayerEngine, []string{"role", "rank"}},
		"delay-messages":         {faults.LayerProtocol, []string{"link", "kinds", "min", "max", "keep_order"}},
		"abort-before-metadata":  {faults.LayerProtocol, []string{"link", "max_hold"}},
		"hold-messages":          {faults.LayerProtocol, []string{"link", "kinds", "after_messages", "max_hold"}},
		"drop-messages":          {faults.LayerProtocol, []string{"link", "kinds", "limit"}},
		"duplicate-messages":     {faults.LayerProtocol, []string{"link", "kinds", "limit"}},
		"latency":                {faults.LayerNetwork, []string{"link", "stream", "delay"}},
		"reset-peer":             {faults.LayerNetwork, []string{"link", "stream", "after"}},
		"timeout":                {faults.LayerNetwork, []string{"link", "stream", "after"}},
		"link-down":              {faults.LayerNetwork, []string{"link"}},
		"sigstop":                {faults.LayerProcess, []string{"role"}},
		"sigkill":                {faults.LayerProcess, []string{"role", "restart"}},
	}
}

func (f *FaultSpec) layer() faults.Layer { return FaultKinds()[f.Kind].layer }

// setParams lists the parameter fields (by yaml name) that are set.
func (f *FaultSpec) setParams() []string {
	v := reflect.ValueOf(*f)
	t := v.Type()
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		switch name {
		case "kind", "at", "for", "every", "count":
			continue
		}
		if !v.Field(i).IsZero() {
			out = append(out, name)
		}
	}
	return out
}

// validate checks the entry; path is e.g. "faults[2]".
func (f *FaultSpec) validate(path string) error {
	kinds := FaultKinds()
	k, ok := kinds[f.Kind]
	if !ok {
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		slices.Sort(names)
		return fieldErr(path+".kind", "%q is not a fault kind (valid: %s)", f.Kind, strings.Join(names, ", "))
	}
	for _, p := range f.setParams() {
		if !slices.Contains(k.params, p) {
			return fieldErr(path+"."+p, "does not apply to kind %s (it takes: %s)", f.Kind, strings.Join(k.params, ", "))
		}
	}
	needLink := slices.Contains(k.params, "link")
	switch {
	case needLink && f.Link == "":
		return fieldErr(path+".link", "required for kind %s (e.g. control/0, kv/0, bootstrap)", f.Kind)
	case f.Kind == "sigstop" || f.Kind == "sigkill" || f.Kind == "stall-scheduler":
		if f.Role == "" {
			return fieldErr(path+".role", "required for kind %s", f.Kind)
		}
	}
	if f.Role != "" && !slices.Contains([]string{"prefill", "decode", "router"}, f.Role) {
		return fieldErr(path+".role", "%q is not prefill, decode or router", f.Role)
	}
	for _, kd := range f.Kinds {
		if !slices.Contains(protocol.Kinds, protocol.Kind(kd)) {
			return fieldErr(path+".kinds", "%q is not a message kind (valid: %v)", kd, protocol.Kinds)
		}
	}
	if f.Stream != "" && f.Stream != string(network.Upstream) && f.Stream != string(network.Downstream) {
		return fieldErr(path+".stream", "%q is not upstream or downstream", f.Stream)
	}
	if f.Kind == "delay-messages" && (f.Max < f.Min || f.Max == 0) {
		return fieldErr(path+".max", "need 0 <= min <= max and max > 0")
	}
	if f.Kind == "latency" && f.Delay < time.Millisecond {
		return fieldErr(path+".delay", "%v must be at least 1ms", f.Delay)
	}
	if f.Kind == "hold-messages" && f.AfterMsgs <= 0 && f.MaxHold <= 0 {
		return fieldErr(path+".after_messages", "need after_messages > 0 or max_hold > 0")
	}
	e := schedule.Entry{Fault: placeholder{}, At: f.At, For: f.For, Every: f.Every, Count: f.Count}
	if err := e.Validate(); err != nil {
		msg := err.Error()
		field := "for"
		for _, c := range []string{"At", "For", "Every", "Count"} {
			if strings.Contains(msg, "field "+c) {
				field = strings.ToLower(c)
			}
		}
		return fieldErr(path+"."+field, "%s", strings.TrimPrefix(msg, "field "))
	}
	return nil
}

// placeholder lets schedule.Entry.Validate check timing before the fault exists.
type placeholder struct{ faults.Fault }

func intOr(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

func protoKinds(ks []string) []protocol.Kind {
	out := make([]protocol.Kind, len(ks))
	for i, k := range ks {
		out[i] = protocol.Kind(k)
	}
	return out
}

// build makes the fault value. rng seeds faults that draw (delay ranges);
// net is the run's shared Toxiproxy injector.
func (f *FaultSpec) build(rng *rand.Rand, net *network.Network) (faults.Fault, error) {
	st := network.Stream(f.Stream)
	switch f.Kind {
	case "pause-transfer-workers":
		return &faults.PauseTransferWorkers{Role: f.Role, Rank: intOr(f.Rank, -1), Worker: intOr(f.Worker, -1)}, nil
	case "pause-transfer-writes":
		return &faults.PauseTransferWorkers{Role: f.Role, Rank: intOr(f.Rank, -1), Worker: intOr(f.Worker, -1), InFlight: true}, nil
	case "stall-bootstrap-loop":
		return &faults.StallBootstrapLoop{Rank: intOr(f.Rank, -1)}, nil
	case "stall-scheduler":
		return &faults.StallScheduler{Role: f.Role, Rank: intOr(f.Rank, -1)}, nil
	case "delay-messages":
		return &protocol.DelayMessages{Link: f.Link, Kinds: protoKinds(f.Kinds), Min: f.Min, Max: f.Max,
			Rand: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), KeepOrder: f.KeepOrder}, nil
	case "abort-before-metadata":
		return &protocol.AbortBeforeMetadata{Link: f.Link, MaxHold: f.MaxHold}, nil
	case "hold-messages":
		return &protocol.HoldMessages{Link: f.Link, Kinds: protoKinds(f.Kinds), After: f.AfterMsgs, MaxHold: f.MaxHold}, nil
	case "drop-messages":
		return &protocol.Drop{Link: f.Link, Kinds: protoKinds(f.Kinds), Limit: f.Limit}, nil
	case "duplicate-messages":
		return &protocol.Duplicate{Link: f.Link, Kinds: protoKinds(f.Kinds), Limit: f.Limit}, nil
	case "latency":
		return &network.Latency{Net: net, Link: f.Link, Stream: st, Delay: f.Delay}, nil
	case "reset-peer":
		return &network.ResetPeer{Net: net, Link: f.Link, Stream: st, After: f.After}, nil
	case "timeout":
		return &network.Timeout{Net: net, Link: f.Link, Stream: st, After: f.After}, nil
	case "link-down":
		return &network.LinkDown{Net: net, Link: f.Link}, nil
	case "sigstop":
		return &process.Stop{Role: f.Role}, nil
	case "sigkill":
		return &process.Kill{Role: f.Role, Restart: f.Restart}, nil
	}
	return nil, fmt.Errorf("build fault: unknown kind %q", f.Kind)
}

// BuildSchedule turns the scenario's fault specs into schedule entries,
// drawing fault parameters from rng. Nothing is applied.
func BuildSchedule(specs []FaultSpec, rng *rand.Rand, net *network.Network) ([]schedule.Entry, error) {
	var out []schedule.Entry
	for i := range specs {
		f, err := specs[i].build(rng, net)
		if err != nil {
			return nil, fmt.Errorf("faults[%d]: %w", i, err)
		}
		s := specs[i]
		out = append(out, schedule.Entry{Fault: f, At: s.At, For: s.For, Every: s.Every, Count: s.Count})
	}
	return out, nil
}
