// Command pdchaos is the CLI: run the bundled engine, run scenarios and
// soaks against it or an external deployment, watch a deployment for
// wedges, and replay a repro bundle.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Exit codes: 0 pass, 1 invariant violated, 2 inconclusive, 3 harness error.
const (
	exitPass         = 0
	exitViolation    = 1
	exitInconclusive = 2
	exitHarness      = 3
)

func main() {
	// Toxiproxy's toxics (bandwidth) log through zerolog's global logger,
	// which writes trace lines to stderr; the CLI owns the process, so it
	// silences that logger once here.
	zlog.Logger = zerolog.Nop()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var stats selfStats
	root := newRoot(&stats)
	err := root.ExecuteContext(ctx)
	stop()
	if serr := stats.close(); serr != nil && err == nil {
		err = &exitError{exitHarness, serr}
	}
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitViolation && ee.code != exitInconclusive {
			fmt.Fprintln(os.Stderr, "pdchaos:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "pdchaos:", err)
	os.Exit(exitHarness)
}

func newRoot(stats *selfStats) *cobra.Command {
	root := &cobra.Command{
		Use:           "pdchaos",
		Short:         "Chaos and fault injection for prefill/decode disaggregated LLM serving",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return stats.start(cmd.Context())
		},
	}
	stats.register(root)
	root.AddCommand(newEngineCmd(), newBenchCmd())
	addCommands(root)
	return root
}
