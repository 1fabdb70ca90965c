package reports_test

import (
	"os"
	"path/filepath"
	"testing"
)

// failingRun is a recorded failing run: late-registration with
// unknown-room-waiting on, seed 7 (one fault window, a wedge, 14 stuck
// rooms). Periodic rooms snapshots were dropped to keep it small.
const failingRun = "testdata/late-registration-fail"

// copyRun copies a recorded run into a fresh directory, so tests render
// into it and never write into testdata.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
