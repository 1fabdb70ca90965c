package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/bench"
)

// selfStats samples the CLI's own RSS, goroutines and open files into a
// file while any command runs (--self-stats), so a long soak or watch can
// be shown not to grow (`pdchaos bench --parts memory` reads it).
type selfStats struct {
	path  string
	every time.Duration
	stop  context.CancelFunc
	done  chan error
	f     *os.File
}

func (s *selfStats) register(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.StringVar(&s.path, "self-stats", "", "append a JSON line of this process's RSS, goroutines and open files to this file every --self-stats-every")
	fl.DurationVar(&s.every, "self-stats-every", 10*time.Second, "sampling period of --self-stats")
}

func (s *selfStats) start(ctx context.Context) error {
	if s.path == "" {
		return nil
	}
	if s.every <= 0 {
		return fmt.Errorf("--self-stats-every %s: must be > 0", s.every)
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("--self-stats: %w", err)
	}
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	s.f, s.done = f, make(chan error, 1)
	go func() { s.done <- bench.SampleSelf(ctx, f, s.every) }()
	return nil
}

// close takes the last sample and closes the file.
func (s *selfStats) close() error {
	if s.stop == nil {
		return nil
	}
	s.stop()
	err := <-s.done
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--self-stats %s: %w", s.path, err)
	}
	return nil
}
