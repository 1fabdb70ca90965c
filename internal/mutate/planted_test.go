package mutate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every bug of the module's corpus still plants: its text occurs exactly
// once in its file, the edit changes the file, and taking it out restores
// the file byte for byte. Code moved or reworded leaves an entry that
// matches nothing; this is where that shows, not an hour into a screen.
func TestPlantedCorpusMatchesTheTree(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	bugs, err := ReadPlanted(filepath.Join(root, PlantedFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bugs {
		if !strings.HasPrefix(p.File, SimulatedDir) {
			t.Errorf("%s edits %s: the screen runs the simulator, which runs only %s", p.Name, p.File, SimulatedDir)
			continue
		}
		dir := t.TempDir()
		orig, err := os.ReadFile(filepath.Join(root, p.File))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, p.File)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		restore, err := p.Apply(dir)
		if err != nil {
			t.Error(err)
			continue
		}
		planted, _ := os.ReadFile(dst)
		if bytes.Equal(planted, orig) || !bytes.Contains(planted, []byte(p.New)) {
			t.Errorf("%s: planting left %s unchanged", p.Name, p.File)
		}
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		if back, _ := os.ReadFile(dst); !bytes.Equal(back, orig) {
			t.Errorf("%s: taking the bug out did not restore %s", p.Name, p.File)
		}
	}
}

// A corpus file with a bad entry is refused whole, the error naming the
// entry and what is wrong with it.
func TestReadPlantedRefusesBadInput(t *testing.T) {
	t.Parallel()
	entry := func(fields string) string { return `{"bugs": [{` + fields + `}]}` }
	for _, tc := range []struct{ name, json, want string }{
		{"empty", "", "no bug listed"},
		{"no bugs", `{"about": "x", "bugs": []}`, "no bug listed"},
		{"unknown key", entry(`"name": "a", "file": "engine/core/x.go", "old": "x", "new": "y", "severity": 3`), "severity"},
		{"bad name", entry(`"name": "Bad Name", "file": "engine/core/x.go", "old": "x", "new": "y"`), `entry 1 ("Bad Name"): name must be`},
		{"twice", `{"bugs": [{"name": "a", "file": "f.go", "old": "x", "new": "y"}, {"name": "a", "file": "f.go", "old": "x", "new": "z"}]}`, `entry 2 ("a"): name used twice`},
		{"absolute file", entry(`"name": "a", "file": "/etc/passwd", "old": "x", "new": "y"`), "relative to the module root"},
		{"file outside", entry(`"name": "a", "file": "../x.go", "old": "x", "new": "y"`), "relative to the module root"},
		{"no old", entry(`"name": "a", "file": "f.go", "new": "y"`), "old is empty"},
		{"no change", entry(`"name": "a", "file": "f.go", "old": "x", "new": "x"`), "changes nothing"},
		{"not an object", `[{"name": "a"}]`, "cannot unmarshal"},
		{"two values", `{"bugs": []} {}`, "more than one JSON value"},
	} {
		path := filepath.Join(t.TempDir(), "bugs.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		bugs, err := ReadPlanted(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || bugs != nil {
			t.Errorf("%s: %v (bugs %v), want an error with %q", tc.name, err, bugs, tc.want)
		}
	}
}

// A bug whose text occurs twice, or no longer at all, is an error naming
// the count, and the file is left as it was.
func TestPlantedApplyNeedsOneMatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const src = "a := 1\nb := 1\n"
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		old  string
		want string
	}{{" := 1", "occurs 2 times"}, {"c := 1", "occurs 0 times"}} {
		if _, err := (Planted{Name: "p", File: "x.go", Old: tc.old, New: " := 2"}).Apply(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("old %q: %v, want %q", tc.old, err, tc.want)
		}
		if b, _ := os.ReadFile(path); string(b) != src {
			t.Errorf("old %q: the file was changed to %q", tc.old, b)
		}
	}
}

// The screen runs the simulator, which runs engine/core only: a bug
// elsewhere is refused before anything is copied or built, as is a screen
// without simulated seeds.
func TestRunPlantedRefusesWhatItCannotScreen(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	opts := Options{Root: filepath.Join("..", ".."), Work: work, SimSeeds: 1}
	_, err := RunPlanted(context.Background(), opts, []Planted{{Name: "router", File: "engine/router.go", Old: "a", New: "b"}})
	if err == nil || !strings.Contains(err.Error(), "runs only engine/core/") {
		t.Errorf("a bug in engine/router.go: %v, want it refused", err)
	}
	opts.SimSeeds = 0
	if _, err := RunPlanted(context.Background(), opts, nil); err == nil || !strings.Contains(err.Error(), "SimSeeds") {
		t.Errorf("no simulated seeds: %v, want it refused", err)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("refused screens left %d entries in the scratch directory", len(entries))
	}
}

// The report names each bug with what it breaks, its sweeps and its
// checkers by seeds (most first), a bug that did not build as such, and
// how many bugs were caught.
func TestWritePlantedMarkdown(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := WritePlantedMarkdown(&b, []PlantedOutcome{
		{Planted: Planted{Name: "a", Why: "x | y"}, Sweeps: 4, Caught: 2, Seeds: map[string]int{"integrity": 3, "timeouts-explained": 9}},
		{Planted: Planted{Name: "b"}, Sweeps: 4},
		{Planted: Planted{Name: "c"}, BuildError: "undefined: x"},
	}, 1, 30, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seeds 1-30 and 10 swarm seeds", "| `a` | x \\| y | 2 of 4 | timeouts-explained 9; integrity 3 |",
		"| `b` |  | 0 of 4 | none |", "| `c` |  | does not build | none |", "1 of 3 bugs caught"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
