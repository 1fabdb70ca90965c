package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness"
	"github.com/pdchaos/pdchaos/harness/doctor"
	"github.com/pdchaos/pdchaos/harness/target"
)

// newDoctorCmd checks a target before a soak, with the target flags of run.
func newDoctorCmd() *cobra.Command {
	var tf targetFlags
	cmd := &cobra.Command{
		Use:   "doctor [--target external --router URL --metrics URL... [--proc ROLE=PATTERN]...]",
		Short: "Check a target before a soak: health endpoints, metrics and their names, version, which checks and fault layers apply; exit 0 all apply, 2 reduced checks, 3 unusable",
		Long: "Check a target before a soak, sending no load: which health endpoints answer (router /readiness or\n" +
			"/health, engine /health_generate or /health), that /metrics is on (404 means --enable-metrics is missing),\n" +
			"which metric families and SGLang version were found (old names such as\n" +
			"sglang:num_prefill_prealloc_queue_reqs included), and which checks and fault layers will apply and why.\n" +
			"One line per finding; exit 3 for an unusable target, 2 when usable with reduced checks, 0 when everything applies.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, opts, closeT, err := tf.doctorTarget(ctx, cmd.OutOrStdout())
			if err != nil {
				return &exitError{exitHarness, err}
			}
			defer closeT()
			rep := doctor.Run(ctx, t, opts)
			rep.Print(cmd.OutOrStdout())
			if code := rep.ExitCode(); code != doctor.ExitOK {
				return &exitError{code, errors.New("doctor: " + strings.Join(rep.Problems(), "; "))}
			}
			return nil
		},
	}
	tf.register(cmd)
	return cmd
}

// doctorTarget opens the target doctor examines. An external deployment is
// not health-checked on the way in: reporting its health is doctor's job.
func (f *targetFlags) doctorTarget(ctx context.Context, out io.Writer) (target.Target, doctor.Options, func(), error) {
	if f.kind == "external" {
		ext, err := f.external()
		if err != nil {
			return nil, doctor.Options{}, nil, err
		}
		// With --bootstrap the hops start, so doctor sees the topology and
		// the links protocol and network faults would use.
		ext.Log = out
		if err := ext.Attach(ctx); err != nil {
			return nil, doctor.Options{}, nil, fmt.Errorf("doctor: %w", err)
		}
		closeT := func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			defer cancel()
			ext.Log = io.Discard // doctor sends no load: "decode never looked up" would mislead
			_ = ext.Close(cctx)
		}
		return ext, doctor.Options{AnswersUnchecked: !f.checkAnswer}, closeT, nil
	}
	src, noCheck, err := f.source(&harness.Scenario{}, io.Discard)
	if err != nil {
		return nil, doctor.Options{}, nil, err
	}
	t, err := src.Open(ctx, contract.EngineConfig{})
	if err != nil {
		return nil, doctor.Options{}, nil, fmt.Errorf("doctor: open %s target: %w", src.Kind(), err)
	}
	closeT := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		_ = t.Close(cctx)
	}
	return t, doctor.Options{AnswersUnchecked: noCheck, InProcess: src.InProcess()}, closeT, nil
}
