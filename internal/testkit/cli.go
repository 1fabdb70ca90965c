package testkit

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CLIPackage is the import path of the pdchaos command.
const CLIPackage = "github.com/pdchaos/pdchaos/cmd/pdchaos"

// BuildCLI builds the pdchaos command into dir and returns the binary's
// path, for tests that run the engine's roles as processes.
func BuildCLI(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "pdchaos")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, CLIPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build pdchaos: %w\n%s", err, out)
	}
	return bin, nil
}

// RunWithCLI is a TestMain body: unless -short, it builds the pdchaos
// command once into a temporary folder, sets *bin to it, runs the tests
// and removes the folder; it returns the exit code.
func RunWithCLI(m *testing.M, bin *string) int {
	flag.Parse()
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "pdchaos-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if *bin, err = BuildCLI(context.Background(), dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
