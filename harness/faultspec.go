package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/catalog"
	"github.com/pdchaos/pdchaos/faults/network"
	"github.com/pdchaos/pdchaos/faults/schedule"
)

// FaultSpec is one fault schedule entry in a scenario file: which fault
// (Kind and its parameters) and when (At and For, each "2s" or "2s-5s";
// Every and Count to repeat). At is measured from the end of warm-up. The
// kinds and their parameters are the table in faults/catalog (`pdchaos
// faults list` prints it); a parameter is written as a key of the entry,
// next to kind.
type FaultSpec struct {
	Kind  string         `yaml:"kind" json:"kind"`
	At    schedule.Range `yaml:"at,omitempty" json:"at"`
	For   schedule.Range `yaml:"for" json:"for"`
	Every time.Duration  `yaml:"every,omitempty" json:"every,omitempty"`
	Count int            `yaml:"count,omitempty" json:"count,omitempty"`
	// Params holds the kind's parameters by YAML key (link, rate, role, …),
	// as the decoder gave them; the catalogue validates and converts them.
	Params map[string]any `yaml:",inline" json:"-"`
}

// FaultKinds maps every scenario fault kind to its layer; it is derived
// from the faults/catalog table on each call (no package state).
func FaultKinds() map[string]faults.Layer {
	out := map[string]faults.Layer{}
	for _, k := range catalog.Kinds() {
		out[k.Name] = k.Layer
	}
	return out
}

func (f *FaultSpec) layer() faults.Layer {
	k, _ := catalog.Lookup(f.Kind)
	return k.Layer
}

// validate checks the entry; path is e.g. "faults[2]". A bad parameter is
// reported on its own key, naming the kind.
func (f *FaultSpec) validate(path string) error {
	k, ok := catalog.Lookup(f.Kind)
	if !ok {
		return fieldErr(path+".kind", "%q is not a fault kind (valid: %s)", f.Kind, strings.Join(catalog.Names(), ", "))
	}
	if _, err := k.Parse(f.Params); err != nil {
		var pe *catalog.ParamError
		if errors.As(err, &pe) {
			return fieldErr(path+"."+pe.Param, "%s", pe.Reason)
		}
		return fieldErr(path, "kind %s: %v", f.Kind, err)
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

// build makes the fault value. rng seeds faults that draw (delay ranges);
// net is the run's shared Toxiproxy injector.
func (f *FaultSpec) build(rng *rand.Rand, net *network.Network) (faults.Fault, error) {
	k, ok := catalog.Lookup(f.Kind)
	if !ok {
		return nil, fmt.Errorf("build fault: unknown kind %q", f.Kind)
	}
	return k.New(f.Params, catalog.Env{Net: net, Rand: rng})
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

// faultTiming is FaultSpec without its parameters, for JSON.
type faultTiming struct {
	Kind  string         `json:"kind"`
	At    schedule.Range `json:"at"`
	For   schedule.Range `json:"for"`
	Every time.Duration  `json:"every,omitempty"`
	Count int            `json:"count,omitempty"`
}

// MarshalJSON writes the parameters as keys of the entry, as in YAML.
func (f FaultSpec) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(faultTiming{f.Kind, f.At, f.For, f.Every, f.Count})
	if err != nil || len(f.Params) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range f.Params {
		if _, clash := m[k]; !clash {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the form MarshalJSON writes. A JSON number for a
// duration parameter is nanoseconds, as encoding/json writes a
// time.Duration.
func (f *FaultSpec) UnmarshalJSON(b []byte) error {
	var t faultTiming
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("decode fault entry: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("decode fault entry: %w", err)
	}
	for _, k := range []string{"kind", "at", "for", "every", "count"} {
		delete(m, k)
	}
	kind, _ := catalog.Lookup(t.Kind)
	for name, v := range m {
		if p, ok := kind.Param(name); ok && p.Type == catalog.TypeDuration {
			if n, ok := v.(float64); ok {
				m[name] = time.Duration(n)
			}
		}
	}
	*f = FaultSpec{Kind: t.Kind, At: t.At, For: t.For, Every: t.Every, Count: t.Count, Params: m}
	if len(m) == 0 {
		f.Params = nil
	}
	return nil
}
