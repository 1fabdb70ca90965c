package target

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// pdchaosBin is the CLI built once for process-mode tests ("" in -short).
var pdchaosBin string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if !testing.Short() {
			dir, err := os.MkdirTemp("", "pdchaos-bin")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			pdchaosBin = filepath.Join(dir, "pdchaos")
			out, err := exec.Command("go", "build", "-o", pdchaosBin, "github.com/pdchaos/pdchaos/cmd/pdchaos").CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "build pdchaos: %v\n%s", err, out)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// TestProcsRestartSameAddresses: a killed role comes back on its addresses.
func TestProcsRestartSameAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engine processes")
	}
	procs, err := StartProcs(t.Context(), pdchaosBin, contract.EngineConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer procs.Close(context.Background())
	before, _ := procs.PID("decode")
	urls := procs.EngineURLs()
	if err := procs.Restart(t.Context(), "decode"); err != nil {
		t.Fatal(err)
	}
	after, _ := procs.PID("decode")
	if after == before || procs.EngineURLs()[1] != urls[1] {
		t.Fatalf("pid %d→%d urls %v→%v", before, after, urls, procs.EngineURLs())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := procs.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if err := RequireLayers(procs, nil); err != nil {
		t.Fatal(err)
	}
}
