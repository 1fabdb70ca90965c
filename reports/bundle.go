package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// BundleKind marks a file as a repro bundle.
const BundleKind = "pdchaos-bundle"

// Bundle limits: the key part of the event log, not all of it.
const (
	// bundleEventCap bounds the events a bundle keeps.
	bundleEventCap = 400
	// bundleAround is how far either side of a violation scrapes are kept.
	bundleAround = time.Second
	// bundleStuckRooms bounds the stuck rooms whose final snapshot is kept.
	bundleStuckRooms = 10
)

// Bundle is one small file to attach to an issue: what ran (the resolved
// scenario, seed, target flags and versions), what was found (verdict and
// each checker's evidence) and the events around the violations.
// `pdchaos repro` runs it directly.
type Bundle struct {
	Kind         string            `yaml:"kind"`
	Created      time.Time         `yaml:"created"`
	Scenario     yaml.Node         `yaml:"scenario"`
	Seed         uint64            `yaml:"seed"`
	Target       string            `yaml:"target"`
	Args         []string          `yaml:"args,omitempty"`
	Regressions  []string          `yaml:"regressions,omitempty"`
	Versions     map[string]string `yaml:"versions,omitempty"`
	Verdict      check.Status      `yaml:"verdict"`
	FirstFailure string            `yaml:"first_failure,omitempty"`
	Repro        string            `yaml:"repro"`
	Checks       []BundleCheck     `yaml:"checks"`
	// EventsNote says how the events were chosen from how many.
	EventsNote string `yaml:"events_note"`
	// Events are events.jsonl lines (JSON) around the violations.
	Events []string `yaml:"events"`
}

// BundleCheck is one checker's verdict and evidence as text.
type BundleCheck struct {
	Name     string       `yaml:"name"`
	Status   check.Status `yaml:"status"`
	Summary  string       `yaml:"summary"`
	Evidence string       `yaml:"evidence,omitempty"`
}

// ArgsLine is the "# args:" header of repro.yaml: the target flags the run
// used, so a replay of the file uses them too.
const ArgsLine = "# args: "

// ReproArgs reads the target flags from a repro.yaml header (nil if none).
func ReproArgs(repro []byte) []string {
	for _, l := range strings.Split(string(repro), "\n") {
		if a, ok := strings.CutPrefix(l, ArgsLine); ok {
			var args []string
			if json.Unmarshal([]byte(a), &args) == nil {
				return args
			}
		}
		if !strings.HasPrefix(l, "#") {
			break
		}
	}
	return nil
}

// NewBundle builds the bundle of a loaded run. The run must have its
// repro.yaml (the resolved scenario).
func NewBundle(r *Run, now time.Time) (*Bundle, error) {
	if len(r.Repro) == 0 {
		return nil, fmt.Errorf("bundle %s: no %s (the resolved scenario)", r.Dir, ReproFile)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(r.Repro, &doc); err != nil {
		return nil, fmt.Errorf("bundle %s: parse %s: %w", r.Dir, ReproFile, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("bundle %s: %s holds no scenario", r.Dir, ReproFile)
	}
	res := r.Result
	b := &Bundle{Kind: BundleKind, Created: now.UTC(), Scenario: *doc.Content[0], Seed: res.Seed, Target: res.Target,
		Args: r.targetArgs(), Regressions: res.Regressions, Versions: res.Versions, Verdict: res.Verdict,
		FirstFailure: res.FirstFailure, Repro: res.Repro}
	// repro.yaml's header comments (status, args, repro line) are about the
	// run, not the scenario; the bundle says all of it in its own fields.
	b.Scenario.HeadComment, b.Scenario.FootComment = "", ""
	if len(b.Scenario.Content) > 0 {
		b.Scenario.Content[0].HeadComment = ""
	}
	for _, c := range res.Checks {
		bc := BundleCheck{Name: c.Name, Status: c.Status, Summary: c.Summary}
		if c.Status != check.Pass {
			bc.Evidence = evidenceText(c)
		}
		b.Checks = append(b.Checks, bc)
	}
	evs := keyEvents(r.Events, res)
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: encode event: %w", r.Dir, err)
		}
		b.Events = append(b.Events, string(line))
	}
	b.EventsNote = fmt.Sprintf("%d of %d events: run, phases, faults, wedges, drain, probes, leaks, end; "+
		"outcomes that were not completed; scrapes within %v of a violation or a fault edge, and the last; "+
		"final rooms snapshots of up to %d stuck rooms", len(evs), len(r.Events), bundleAround, bundleStuckRooms)
	return b, nil
}

// targetArgs are the run's target flags: repro.yaml's header, else
// result.json's, else the target kind alone (runs stored before flags were
// recorded).
func (r *Run) targetArgs() []string {
	if a := ReproArgs(r.Repro); a != nil {
		return a
	}
	if r.Result.Args != nil {
		return r.Result.Args
	}
	if r.Result.Target != "" {
		return []string{"--target=" + r.Result.Target}
	}
	return nil
}

// keyEvents picks the events around the violations.
func keyEvents(evs []check.Event, res *RunResult) []check.Event {
	var marks []time.Duration
	stuck := map[uint64]bool{}
	for _, c := range res.Checks {
		for _, s := range c.Stuck {
			marks = append(marks, s.Since)
			if len(stuck) < bundleStuckRooms {
				stuck[s.Room] = true
			}
		}
	}
	for _, w := range res.Wedges {
		marks = append(marks, w.Since, w.At)
	}
	for _, f := range res.Faults {
		marks = append(marks, f.Start, f.End)
	}
	near := func(t time.Duration) bool {
		for _, m := range marks {
			if t >= m-bundleAround && t <= m+bundleAround {
				return true
			}
		}
		return false
	}
	lastScrape := map[string]int{}
	for i, ev := range evs {
		if ev.Scrape != nil {
			lastScrape[ev.Source] = i
		}
	}
	var out []check.Event
	for i, ev := range evs {
		switch {
		case ev.Type == check.EvOutcome && ev.Outcome != nil:
			if ev.Outcome.Kind == "completed" || (ev.Outcome.Kind == "cancelled" && !near(ev.T)) {
				continue
			}
		case ev.Type == check.EvScrape:
			if !near(ev.T) && lastScrape[ev.Source] != i {
				continue
			}
		case ev.Type == check.EvRooms:
			if ev.Rooms == nil || !ev.Rooms.Final {
				continue
			}
			snap := *ev.Rooms
			snap.Held = slices.DeleteFunc(slices.Clone(snap.Held), func(h contract.RoomRecord) bool { return !stuck[h.Room] })
			snap.PeerCleared = slices.DeleteFunc(slices.Clone(snap.PeerCleared), func(h contract.RoomRecord) bool { return !stuck[h.Room] })
			ev.Rooms = &snap
		}
		out = append(out, ev)
	}
	if len(out) > bundleEventCap {
		// Keep the head (run, phases) and the tail (drain, final rooms, end).
		out = append(out[:bundleEventCap/4:bundleEventCap/4], out[len(out)-bundleEventCap*3/4:]...)
	}
	return out
}

// Write encodes the bundle as YAML to path.
func (b *Bundle) Write(path string) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# pdchaos repro bundle: scenario %s, seed %d, verdict %s\n# replay: pdchaos repro %s\n",
		b.ScenarioName(), b.Seed, b.Verdict, path)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("encode bundle: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode bundle: %w", err)
	}
	return writeAtomic(path, buf.Bytes())
}

// ScenarioName is the bundled scenario's name field.
func (b *Bundle) ScenarioName() string {
	var s struct {
		Name string `yaml:"name"`
	}
	_ = b.Scenario.Decode(&s)
	return s.Name
}

// ScenarioYAML is the bundled scenario as a YAML document, ready for the
// harness's scenario parser.
func (b *Bundle) ScenarioYAML() ([]byte, error) {
	out, err := yaml.Marshal(&b.Scenario)
	if err != nil {
		return nil, fmt.Errorf("encode bundled scenario: %w", err)
	}
	return out, nil
}

// ErrNotBundle is returned by ReadBundle for a file that is not a bundle
// (e.g. a plain repro.yaml).
var ErrNotBundle = errors.New("not a pdchaos repro bundle")

// ReadBundle reads a bundle file; a YAML file without kind pdchaos-bundle
// is ErrNotBundle.
func ReadBundle(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	return ParseBundle(path, data)
}

// ParseBundle decodes a bundle; name is for errors.
func ParseBundle(name string, data []byte) (*Bundle, error) {
	var head struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil || head.Kind != BundleKind {
		return nil, fmt.Errorf("%s: %w", name, ErrNotBundle)
	}
	var b Bundle
	if err := yaml.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("decode bundle %s: %w", name, err)
	}
	if b.Scenario.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("decode bundle %s: no scenario", name)
	}
	return &b, nil
}
