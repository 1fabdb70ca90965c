package mutate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fixture = "testdata/fixture"

// TestListFixture: the fixture's three probe sites give one skip, one
// wrong exit, and one observe-only site (nothing follows its Hit).
func TestListFixture(t *testing.T) {
	ms, obs, err := List(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Probe+" "+m.Place()+" "+string(m.Kind))
	}
	want := []string{
		"pool/ack-unknown-room pool/pool.go:35 wrong-exit",
		"pool/ack-frees-pages pool/pool.go:43 skip",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutants:\n got %q\nwant %q", got, want)
	}
	if len(obs) != 1 || obs[0].Probe != "pool/ack-duplicate" {
		t.Errorf("observe-only sites: got %+v, want pool/ack-duplicate", obs)
	}
	if d := ms[1].Dropped; !slices.Equal(d, []string{"p.free += aw.pages", "delete(p.awaiting, room)"}) {
		t.Errorf("skip of ack-frees-pages drops %q", d)
	}
}

// TestMutantsChangeBehaviour is the proof that a mutant breaks what its
// branch does: the fixture's unit tests pass on the original and the test
// of the broken branch fails in each mutant's copy, while the probe's Hit
// is still there.
func TestMutantsChangeBehaviour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests module copies")
	}
	ms, _, err := List(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	orig := copyFixture(ctx, t)
	if out, err := goTest(ctx, orig); err != nil {
		t.Fatalf("unmutated fixture fails its tests: %v\n%s", err, out)
	}
	fails := map[string]string{
		"pool/ack-unknown-room": "TestAckUnknownRoomIsAnError",
		"pool/ack-frees-pages":  "TestAckFreesPagesOnLastRank",
	}
	for _, m := range ms {
		t.Run(m.ID(), func(t *testing.T) {
			dir := copyFixture(ctx, t)
			if err := Apply(dir, m); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, m.File))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "p.probes.Hit(") {
				t.Fatalf("mutant lost its probe's Hit:\n%s", src)
			}
			out, err := goTest(ctx, dir)
			if err == nil {
				t.Fatalf("mutant %s passes the fixture's tests; the branch was not broken", m.ID())
			}
			if want := "--- FAIL: " + fails[m.Probe]; !strings.Contains(out, want) {
				t.Errorf("mutant %s: want %q in the test output, got\n%s", m.ID(), want, out)
			}
		})
	}
}

// TestListModule: every probe site of the real module is found (the sites
// file agrees with the code) and every mutant of it applies and prints.
func TestListModule(t *testing.T) {
	root := filepath.Join("..", "..")
	sites, err := ReadSites(root)
	if err != nil {
		t.Fatal(err)
	}
	ms, obs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]bool{}
	for _, m := range ms {
		places[m.Place()] = true
	}
	for _, s := range obs {
		places[s.File+":"+itoa(s.Line)] = true
	}
	for _, s := range sites {
		if !places[s.File+":"+itoa(s.Line)] {
			t.Errorf("probe %s at %s:%d has neither a mutant nor an observe-only entry", s.Probe, s.File, s.Line)
		}
	}
	if len(ms) == 0 {
		t.Fatal("no mutants in the module")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func copyFixture(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := CopyModule(ctx, fixture, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pool", "pool.go")); err != nil {
		t.Fatalf("copy of the fixture lacks pool/pool.go: %v", err)
	}
	return dir
}

func goTest(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestEngineCoreMutantFailsItsUnitTest is the same proof on the real
// engine: in a copy of the module, skipping decode's ack-frees-pages
// handling makes engine/core's TestAbortInPauseWindow fail ("decode kept
// pages after ACK"), which passes in the same copy unmutated.
func TestEngineCoreMutantFailsItsUnitTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the module")
	}
	root := filepath.Join("..", "..")
	ms, _, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m Mutant) bool { return m.Probe == "decode/ack-frees-pages" && m.Kind == Skip })
	if i < 0 {
		t.Fatal("no skip mutant of decode/ack-frees-pages")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := CopyModule(ctx, root, dir); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestAbortInPauseWindow$", "./engine/core/")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil {
		t.Fatalf("unmutated copy fails TestAbortInPauseWindow: %v\n%s", err, out)
	}
	if err := Apply(dir, ms[i]); err != nil {
		t.Fatal(err)
	}
	out, err := run()
	if err == nil {
		t.Fatalf("mutant %s passes TestAbortInPauseWindow; the branch was not broken", ms[i].ID())
	}
	if !strings.Contains(out, "decode kept pages after ACK") {
		t.Errorf("mutant %s failed for another reason:\n%s", ms[i].ID(), out)
	}
}
