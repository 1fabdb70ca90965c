package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
)

// Scenario is one chaos run as a YAML file: target, engine settings, load,
// fault schedule and check deadlines. One seed drives every random choice.
// Unknown keys are rejected; durations are written like `30s`.
type Scenario struct {
	// Name identifies the scenario in run directories and reports.
	Name string `yaml:"name" json:"name"`
	// Description says what the scenario is for.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Seed drives agents, load and faults; 0 draws one at run time (printed).
	Seed uint64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// Duration is how long load runs (warm-up included).
	Duration time.Duration `yaml:"duration" json:"duration"`
	// Target is the default target kind: bundled (default) or procs.
	Target string `yaml:"target,omitempty" json:"target,omitempty"`
	// Engine configures the bundled engine (ignored by external targets,
	// which refuse a scenario that asks for regressions).
	Engine contract.EngineConfig `yaml:"engine,omitempty" json:"engine"`
	// Agents is the agent swarm; Preset names agents.Preset, Options override it.
	Agents AgentsSpec `yaml:"agents,omitempty" json:"agents"`
	// OpenLoop is optional fixed-rate load alongside the agents.
	OpenLoop *agents.OpenLoopOptions `yaml:"open_loop,omitempty" json:"open_loop,omitempty"`
	// Faults is the fault schedule, offsets from the end of warm-up.
	Faults []FaultSpec `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Checks holds deadlines and floors for judging.
	Checks CheckSpec `yaml:"checks,omitempty" json:"checks"`
}

// AgentsSpec is the agents section: a preset, a duration scale and
// per-field overrides.
type AgentsSpec struct {
	// Preset is an agents preset name; empty starts from zero Options.
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Scale multiplies every duration of the preset (not of Options) to fit
	// a fast engine and CI; 0 means 1.
	Scale float64 `yaml:"scale,omitempty" json:"scale,omitempty"`
	// Options overrides preset fields that are set.
	Options agents.Options `yaml:"options,omitempty" json:"options"`
}

// CheckSpec holds the judging knobs. Zero fields take the defaults below.
type CheckSpec struct {
	// DrainDeadline bounds the wait for every gauge to reach 0 and every room
	// to clear after load stops; default 10s. Keep it above engine timeouts.
	DrainDeadline time.Duration `yaml:"drain_deadline,omitempty" json:"drain_deadline"`
	// Probes is how many fresh requests liveness sends; default 3.
	Probes int `yaml:"probes,omitempty" json:"probes"`
	// ProbeDeadline bounds each probe; default 10s.
	ProbeDeadline time.Duration `yaml:"probe_deadline,omitempty" json:"probe_deadline"`
	// MinRequests and MinCancels are the load floor; defaults 20 and 1.
	MinRequests int `yaml:"min_requests,omitempty" json:"min_requests"`
	MinCancels  int `yaml:"min_cancels,omitempty" json:"min_cancels"`
	// WedgeWindow is how long a gauge may sit above 0 unchanged with no
	// progress before the watchdog flags it; default 5s.
	WedgeWindow time.Duration `yaml:"wedge_window,omitempty" json:"wedge_window"`
	// ScrapeInterval is the recorder's period; default 250ms.
	ScrapeInterval time.Duration `yaml:"scrape_interval,omitempty" json:"scrape_interval"`
}

// withDefaults fills zero check fields.
func (c CheckSpec) withDefaults() CheckSpec {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.DrainDeadline, 10*time.Second)
	set(&c.ProbeDeadline, 10*time.Second)
	set(&c.WedgeWindow, 5*time.Second)
	set(&c.ScrapeInterval, record.DefaultInterval)
	if c.Probes == 0 {
		c.Probes = 3
	}
	if c.MinRequests == 0 {
		c.MinRequests = check.DefaultMinRequests
	}
	if c.MinCancels == 0 {
		c.MinCancels = check.DefaultMinCancels
	}
	return c
}

// Floor is the load floor the load-floor checker judges by.
func (c CheckSpec) Floor() check.Floor {
	return check.Floor{MinRequests: c.MinRequests, MinCancels: c.MinCancels}
}

// FieldError is a bad scenario field: its YAML path and what is wrong.
// Load adds the file and line.
type FieldError struct {
	Path   string
	Reason string
}

// Error reads "field faults[0].for: must be > 0".
func (e *FieldError) Error() string { return fmt.Sprintf("field %s: %s", e.Path, e.Reason) }

func fieldErr(path, format string, a ...any) error {
	return &FieldError{Path: path, Reason: fmt.Sprintf(format, a...)}
}

// Validate checks every field without starting anything.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return fieldErr("name", "empty")
	}
	if s.Duration <= 0 {
		return fieldErr("duration", "%v must be > 0", s.Duration)
	}
	switch s.Target {
	case "", "bundled", "procs":
	default:
		return fieldErr("target", "%q is not bundled or procs (external targets are chosen on the command line)", s.Target)
	}
	if _, err := s.Engine.WithProfile(); err != nil { // before Resolve, to point at the key
		return fieldErr("engine.profile", "%v", err)
	}
	if _, _, err := s.Engine.Resolve(); err != nil { // exactly as the engine will
		return fieldErr("engine", "%v", err)
	}
	if s.Agents.Preset != "" {
		if _, err := agents.Preset(s.Agents.Preset); err != nil {
			return fieldErr("agents.preset", "%v", err)
		}
	}
	if s.Agents.Scale < 0 {
		return fieldErr("agents.scale", "%v is negative", s.Agents.Scale)
	}
	if o, err := s.AgentOptions(); err != nil {
		return fieldErr("agents.options", "%v", err)
	} else if err := o.WithDefaults().Validate(); err != nil {
		return fieldErr("agents.options", "%v", err)
	}
	if s.OpenLoop != nil {
		if err := s.OpenLoop.Validate(); err != nil {
			return fieldErr("open_loop", "%v", err)
		}
	}
	for i := range s.Faults {
		if err := s.Faults[i].validate(fmt.Sprintf("faults[%d]", i)); err != nil {
			return err
		}
	}
	c := s.Checks
	for _, d := range []struct {
		n string
		v time.Duration
	}{{"drain_deadline", c.DrainDeadline}, {"probe_deadline", c.ProbeDeadline}, {"wedge_window", c.WedgeWindow}, {"scrape_interval", c.ScrapeInterval}} {
		if d.v < 0 {
			return fieldErr("checks."+d.n, "%v is negative", d.v)
		}
	}
	if c.Probes < 0 || c.MinRequests < 0 || c.MinCancels < 0 {
		return fieldErr("checks", "probes, min_requests and min_cancels must not be negative")
	}
	return nil
}

// AgentOptions resolves the swarm options: preset, scaled, then overrides.
func (s *Scenario) AgentOptions() (agents.Options, error) {
	var base agents.Options
	if s.Agents.Preset != "" {
		p, err := agents.Preset(s.Agents.Preset)
		if err != nil {
			return base, err
		}
		base = p
	}
	if s.Agents.Scale > 0 && s.Agents.Scale != 1 {
		base = base.Scaled(s.Agents.Scale)
	}
	return mergeOptions(base, s.Agents.Options), nil
}

// Layers lists the fault layers the scenario's schedule needs.
func (s *Scenario) Layers() []faults.Layer {
	seen := map[faults.Layer]bool{}
	var out []faults.Layer
	for _, f := range s.Faults {
		if l := f.layer(); !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

var lineRE = regexp.MustCompile(`line (\d+): `)

// ParseScenario decodes and validates a scenario; name is the file name
// used in errors. Unknown keys and bad values are one error naming the file,
// line, field and problem.
func ParseScenario(name string, data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("scenario %s: %s", name, cleanYAMLErr(err))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario %s: %s", name, cleanYAMLErr(err))
	}
	if err := s.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			if n := lookupNode(&root, strings.FieldsFunc(fe.Path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })...); n != nil {
				return nil, fmt.Errorf("scenario %s:%d: %w", name, n.Line, err)
			}
		}
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	// Expand the profile now, so the run's record (result.json, repro.yaml)
	// and the target checks see every regression it switches on.
	s.Engine, _ = s.Engine.WithProfile() // validated above
	return &s, nil
}

// SetProfile switches an upstream profile on (`--profile NAME`): its wire
// and regressions join the scenario's engine settings, as the scenario's
// own `engine.profile` would. A scenario that already names a different
// profile, or a wire the profile does not speak, is an error naming both.
func (s *Scenario) SetProfile(name string) error {
	if name = strings.TrimSpace(name); name == "" {
		return nil
	}
	if s.Engine.Profile != "" && s.Engine.Profile != name {
		return fmt.Errorf("--profile %s: scenario %s already sets engine.profile %s", name, s.Name, s.Engine.Profile)
	}
	e := s.Engine
	e.Profile = name
	e, err := e.WithProfile()
	if err != nil {
		return fmt.Errorf("--profile: scenario %s: %w", s.Name, err)
	}
	s.Engine = e
	return nil
}

// cleanYAMLErr turns yaml's "line 5: field x not found in type …" into
// "line 5: field x: unknown key".
func cleanYAMLErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	var out []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(l, "yaml: "))
		if l == "" {
			continue
		}
		if i := strings.Index(l, " not found in type "); i >= 0 {
			l = l[:i] + ": unknown key"
		}
		if m := lineRE.FindStringSubmatch(l); m != nil {
			l = "line " + m[1] + ": " + strings.TrimPrefix(l, m[0])
		}
		out = append(out, l)
	}
	return strings.Join(out, "; ")
}

// lookupNode walks a document by mapping keys and sequence indexes.
func lookupNode(n *yaml.Node, path ...string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					if next.Kind == yaml.ScalarNode {
						next = n.Content[i] // point at the key line
					}
				}
			}
			if next == nil {
				return n
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n
			}
			n = n.Content[i]
		default:
			return n
		}
	}
	return n
}

// LoadScenario reads a scenario file, or a preset by name from presets
// (suites/scenarios) when no such file exists.
func LoadScenario(nameOrPath string, presets fs.FS) (*Scenario, error) {
	if data, err := os.ReadFile(nameOrPath); err == nil {
		return ParseScenario(nameOrPath, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read scenario %s: %w", nameOrPath, err)
	}
	if presets != nil {
		file := strings.TrimSuffix(nameOrPath, ".yaml") + ".yaml"
		if data, err := fs.ReadFile(presets, file); err == nil {
			return ParseScenario(file, data)
		}
	}
	names, _ := PresetNames(presets)
	return nil, fmt.Errorf("scenario %q: no such file or preset (presets: %s)", nameOrPath, strings.Join(names, ", "))
}

// PresetNames lists the preset scenario names in presets.
func PresetNames(presets fs.FS) ([]string, error) {
	if presets == nil {
		return nil, nil
	}
	m, err := fs.Glob(presets, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list preset scenarios: %w", err)
	}
	for i := range m {
		m[i] = strings.TrimSuffix(m[i], ".yaml")
	}
	return m, nil
}

// YAML renders the scenario as a scenario file (repro bundles).
func (s *Scenario) YAML() ([]byte, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("render scenario %s: %w", s.Name, err)
	}
	return b, nil
}

// mergeOptions overlays every non-zero field of over onto base. A zero
// override cannot switch a preset field off; leave the preset out for that.
func mergeOptions(base, over agents.Options) agents.Options {
	bv := reflect.ValueOf(&base).Elem()
	ov := reflect.ValueOf(over)
	for i := range ov.NumField() {
		if f := ov.Field(i); !f.IsZero() {
			bv.Field(i).Set(f)
		}
	}
	return base
}
