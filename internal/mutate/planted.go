package mutate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// PlantedFile is the module's corpus of bugs planted off the probe sites,
// relative to its root (`make planted-bugs`).
const PlantedFile = "suites/planted-bugs.json"

// Planted is a bug planted by hand where no probe marks the branch: one
// text edit of one file of the module, Old (which must occur exactly once
// there) replaced by New. A user's bug need not sit on a probe site; the
// corpus keeps the ones screened, so a checker that stops catching one
// shows.
type Planted struct {
	// Name identifies the bug: lower-case words joined by hyphens.
	Name string `json:"name"`
	// File is the edited file, relative to the module root.
	File string `json:"file"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// Why says what the edit breaks, for a reader of the report.
	Why string `json:"why"`
}

var plantedName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ReadPlanted reads a corpus file: a JSON object whose "bugs" list the
// Planted ("about" says what the file is), unknown keys refused, every
// field but Why required, names unique, Old and New different, File a
// relative path inside the module. An error names the entry and what is
// wrong; nothing is returned then.
func ReadPlanted(path string) ([]Planted, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read planted bugs: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var corpus struct {
		About string    `json:"about"`
		Bugs  []Planted `json:"bugs"`
	}
	if err := dec.Decode(&corpus); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read planted bugs %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("read planted bugs %s: more than one JSON value", path)
	}
	bugs := corpus.Bugs
	if len(bugs) == 0 {
		return nil, fmt.Errorf("read planted bugs %s: no bug listed", path)
	}
	seen := map[string]bool{}
	for i, p := range bugs {
		where := fmt.Sprintf("read planted bugs %s: entry %d (%q)", path, i+1, p.Name)
		switch {
		case !plantedName.MatchString(p.Name):
			return nil, fmt.Errorf("%s: name must be lower-case words joined by hyphens", where)
		case seen[p.Name]:
			return nil, fmt.Errorf("%s: name used twice", where)
		case p.File == "" || filepath.IsAbs(p.File) || !filepath.IsLocal(p.File):
			return nil, fmt.Errorf("%s: file %q must be a path relative to the module root, inside it", where, p.File)
		case p.Old == "":
			return nil, fmt.Errorf("%s: old is empty (the text the bug replaces)", where)
		case p.Old == p.New:
			return nil, fmt.Errorf("%s: new is the same as old: the edit changes nothing", where)
		}
		seen[p.Name] = true
	}
	return bugs, nil
}

// Apply plants p in the module copy at dir and returns how to take it
// out again. Old must occur exactly once in the file: a corpus entry that
// no longer matches the tree (or matches twice) is an error naming the
// count, never a silent no-op.
func (p Planted) Apply(dir string) (restore func() error, err error) {
	path := filepath.Join(dir, p.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plant %s: %w", p.Name, err)
	}
	if n := bytes.Count(b, []byte(p.Old)); n != 1 {
		return nil, fmt.Errorf("plant %s: the text to replace occurs %d times in %s, want exactly once (is %s stale?)", p.Name, n, p.File, PlantedFile)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode()
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(p.Old), []byte(p.New), 1), mode); err != nil {
		return nil, fmt.Errorf("plant %s: %w", p.Name, err)
	}
	return func() error { return os.WriteFile(path, b, mode) }, nil
}

// PlantedOutcome is one planted bug screened in the simulator: every
// preset's sweep (each in both dialects, plain and swarm seeds), how many
// failed and by which checkers.
type PlantedOutcome struct {
	Planted
	// Sweeps ran and Caught failed at least one seed.
	Sweeps, Caught int
	// Seeds counts, by checker, the failing seeds over every sweep.
	Seeds      map[string]int `json:"seeds,omitempty"`
	BuildError string         `json:"build_error,omitempty"`
	// Crashed lists the presets whose simulated engine stopped (a panic):
	// counted caught, as the gate's crash checker would.
	Crashed []string    `json:"crashed,omitempty"`
	Runs    []RunResult `json:"runs,omitempty"`
}

// RunPlanted screens each bug in the simulator (opts.SimSeeds must be
// above 0): one copy of Root, the bug planted, built, every preset swept
// (opts.Presets; by default each in both dialects), the bug taken out
// again. Only engine/core runs in the simulator: a bug elsewhere is an
// error before anything runs. Root is never touched.
func RunPlanted(ctx context.Context, opts Options, bugs []Planted) ([]PlantedOutcome, error) {
	if opts.SimSeeds <= 0 {
		return nil, errors.New("mutate: planted bugs are screened in the simulator: give SimSeeds")
	}
	for _, p := range bugs {
		if !strings.HasPrefix(filepath.ToSlash(p.File), SimulatedDir) {
			return nil, fmt.Errorf("mutate: planted bug %s edits %s: the simulator runs only %s", p.Name, p.File, SimulatedDir)
		}
	}
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	dir, err := scratchCopy(ctx, opts)
	if err != nil {
		return nil, err
	}
	// Every entry must still match before the first build: a stale
	// corpus fails at once, not an hour in.
	for _, p := range bugs {
		restore, err := p.Apply(dir)
		if err != nil {
			return nil, err
		}
		if err := restore(); err != nil {
			return nil, fmt.Errorf("mutate: take %s out again: %w", p.Name, err)
		}
	}
	var out []PlantedOutcome
	for _, p := range bugs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		o, err := screenPlanted(ctx, opts, dir, p)
		if err != nil {
			return out, err
		}
		fmt.Fprintf(opts.Log, "%s: %d of %d sweeps fail\n", p.Name, o.Caught, o.Sweeps)
		out = append(out, o)
	}
	return out, nil
}

func screenPlanted(ctx context.Context, opts Options, dir string, p Planted) (PlantedOutcome, error) {
	o := PlantedOutcome{Planted: p, Seeds: map[string]int{}}
	restore, err := p.Apply(dir)
	if err != nil {
		return o, err
	}
	defer func() { _ = restore() }()
	bin, err := Build(ctx, dir)
	if err != nil {
		o.BuildError = err.Error()
		return o, nil
	}
	for _, preset := range opts.Presets {
		r := runSim(ctx, opts, bin, dir, preset, nil, "")
		if ctx.Err() != nil {
			return o, ctx.Err()
		}
		o.Sweeps++
		if r.Crashed {
			o.Caught++
			o.Crashed = append(o.Crashed, preset)
		} else if r.ExitCode != 0 {
			o.Caught++
		}
		for _, c := range r.Failed {
			o.Seeds[c] += r.FailedSeeds[c]
		}
		r.Probes = nil
		o.Runs = append(o.Runs, r)
	}
	return o, restore()
}

// WritePlantedMarkdown writes the screen as a table: each bug, what it
// breaks, the sweeps that caught it and the checkers, most seeds first.
func WritePlantedMarkdown(w io.Writer, outcomes []PlantedOutcome, seed uint64, simSeeds, swarmSeeds int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Bugs planted off the probe sites\n\nEach bug of `%s` planted alone in a copy of the module; every preset swept in the simulator (seeds %d-%d", PlantedFile, seed, seed+uint64(simSeeds)-1)
	if swarmSeeds > 0 {
		fmt.Fprintf(&b, " and %d swarm seeds", swarmSeeds)
	}
	b.WriteString(" each, in both dialects). A sweep catches the bug when any seed fails.\n\n| bug | breaks | sweeps failing | seeds failing, by checker |\n|---|---|---|---|\n")
	caught := 0
	for _, o := range outcomes {
		verdict := fmt.Sprintf("%d of %d", o.Caught, o.Sweeps)
		if o.BuildError != "" {
			verdict = "does not build"
		}
		if o.Caught > 0 {
			caught++
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.Name, strings.ReplaceAll(o.Why, "|", `\|`), verdict, checkerSeeds(o.Seeds, o.Crashed))
	}
	fmt.Fprintf(&b, "\n%d of %d bugs caught in at least one sweep.\n", caught, len(outcomes))
	_, err := io.WriteString(w, b.String())
	return err
}

func checkerSeeds(seeds map[string]int, crashed []string) string {
	names := slices.Collect(maps.Keys(seeds))
	sort.Slice(names, func(i, j int) bool {
		if seeds[names[i]] != seeds[names[j]] {
			return seeds[names[i]] > seeds[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, c := range names {
		parts = append(parts, fmt.Sprintf("%s %d", c, seeds[c]))
	}
	if len(crashed) > 0 {
		parts = append(parts, fmt.Sprintf("crashed in %s", strings.Join(crashed, ", ")))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
