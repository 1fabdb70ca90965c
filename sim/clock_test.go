package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The simulator reads no wall clock and sleeps on none: time is the
// virtual clock only, or replay breaks. Imports are checked in contract;
// calls are checked here.
func TestNoWallClock(t *testing.T) {
	t.Parallel()
	bad := regexp.MustCompile(`time\.(Now|Since|Until|Sleep|After|AfterFunc|NewTimer|NewTicker|Tick)\(`)
	files, _ := filepath.Glob("*.go")
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if m := bad.Find(b); m != nil {
			t.Errorf("%s calls %s: the simulator must use its virtual clock", f, m)
		}
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
