package catalog

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/faults/network"
)

// Env is what constructors need besides parameters, supplied by whoever
// runs the faults.
type Env struct {
	// Net is the run's shared Toxiproxy injector; network kinds need it.
	Net *network.Network
	// Rand is the run's seeded source; kinds that draw (delay-messages)
	// take a sub-source from it, so one seed reproduces the run.
	Rand *rand.Rand
}

// Kind is one scenario fault kind: a row of the table.
type Kind struct {
	// Name is the scenario's `kind:` value.
	Name string
	// Layer is where the fault acts; a target must support it.
	Layer faults.Layer
	// Doc is one line saying what the fault does.
	Doc string
	// Params are the keys an entry of this kind may set, besides the
	// schedule keys (kind, at, for, every, count).
	Params []Param
	// Example is a valid parameter set, shown by `pdchaos faults list` and
	// built by the tests.
	Example map[string]any
	// Check applies rules between parameters (nil: none); single values
	// are checked against Params before it runs.
	Check func(Values) error
	// Build makes the fault value from validated parameters.
	Build func(Values, Env) (faults.Fault, error)
}

// Param returns the named parameter.
func (k Kind) Param(name string) (Param, bool) {
	i := slices.IndexFunc(k.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return k.Params[i], true
}

// ParamNames lists the kind's parameter names in table order.
func (k Kind) ParamNames() []string {
	out := make([]string, len(k.Params))
	for i, p := range k.Params {
		out[i] = p.Name
	}
	return out
}

// Parse validates raw parameters (YAML key to value, as a YAML or JSON
// decoder yields them) and fills defaults. Unknown keys, missing required
// ones, wrong types and out-of-bounds values are a *ParamError naming the
// parameter and the kind; keys are checked in sorted order, so the error is
// stable.
func (k Kind) Parse(raw map[string]any) (Values, error) {
	v := Values{kind: k.Name, m: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if _, ok := k.Param(name); !ok {
			takes := strings.Join(k.ParamNames(), ", ")
			if takes == "" {
				takes = "no parameters"
			}
			return Values{}, &ParamError{Kind: k.Name, Param: name,
				Reason: fmt.Sprintf("does not apply to kind %s (it takes: %s)", k.Name, takes)}
		}
	}
	for _, p := range k.Params {
		raw, set := raw[p.Name]
		if !set {
			if p.Required {
				return Values{}, v.errorf(p.Name, "required")
			}
			d, err := p.defaultValue()
			if err != nil {
				return Values{}, v.errorf(p.Name, "bad default: %v", err)
			}
			v.m[p.Name] = d
			continue
		}
		val, err := p.parse(raw)
		if err != nil {
			return Values{}, v.errorf(p.Name, "%v", err)
		}
		v.m[p.Name] = val
	}
	if k.Check != nil {
		if err := k.Check(v); err != nil {
			return Values{}, err
		}
	}
	return v, nil
}

// New validates raw parameters and builds the fault. A fault type with a
// Validate method is validated too, so the table cannot accept what the
// fault would refuse at injection. Nothing is applied.
func (k Kind) New(raw map[string]any, env Env) (faults.Fault, error) {
	v, err := k.Parse(raw)
	if err != nil {
		return nil, err
	}
	if k.Build == nil {
		return nil, fmt.Errorf("build %s: kind has no constructor", k.Name)
	}
	f, err := k.Build(v, env)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", k.Name, err)
	}
	if val, ok := f.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return nil, fmt.Errorf("build %s: %w", k.Name, err)
		}
	}
	return f, nil
}

// Lookup returns the kind with that name.
func Lookup(name string) (Kind, bool) {
	ks := Kinds()
	i := slices.IndexFunc(ks, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return ks[i], true
}

// Names lists every kind name, sorted.
func Names() []string {
	ks := Kinds()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	slices.Sort(out)
	return out
}

// ErrNoRand is returned when a kind that draws is built without Env.Rand.
var ErrNoRand = errors.New("no seeded random source (Env.Rand)")
