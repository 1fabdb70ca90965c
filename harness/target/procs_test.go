package target

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/process"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// pdchaosBin is the CLI built once for process-mode tests ("" in -short).
var pdchaosBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if bin := os.Getenv(helperEnv); bin != "" {
		os.Exit(procsHelper(bin))
	}
	os.Exit(testkit.RunWithCLI(m, &pdchaosBin))
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

// helperEnv makes the test binary act as a harness that starts the role
// processes and then waits to be killed (TestRolesDieWithTheHarness).
const helperEnv = "PDCHAOS_TEST_PROCS_HELPER"

// procsHelper starts the engine as processes, prints their pids as one JSON
// line and blocks until stdin closes.
func procsHelper(bin string) int {
	procs, err := StartProcs(context.Background(), bin, contract.EngineConfig{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pids := map[string]int{}
	for _, r := range procs.Roles() {
		pids[r], _ = procs.PID(r)
	}
	_ = json.NewEncoder(os.Stdout).Encode(pids)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = procs.Close(context.Background())
	return 0
}

// TestRolesDieWithTheHarness: kill -9 of the harness leaves no role
// process behind, not even one that was stopped at the time.
func TestRolesDieWithTheHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engine processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := exec.Command(self, "-test.run=^$")
	h.Env = append(os.Environ(), helperEnv+"="+pdchaosBin)
	stdin, err := h.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	var pids map[string]int
	if err := json.NewDecoder(out).Decode(&pids); err != nil || len(pids) != 3 {
		_ = h.Process.Kill()
		_ = h.Wait()
		t.Fatalf("helper pids %v: %v", pids, err)
	}
	if err := syscall.Kill(pids["decode"], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := h.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.Wait()
	testkit.Eventually(t, 10*time.Second, func() error {
		for role, pid := range pids {
			if st, _ := process.State(pid); st != 0 && st != 'Z' {
				return fmt.Errorf("%s (pid %d) outlived its harness, state %c", role, pid, st)
			}
		}
		return nil
	})
}
