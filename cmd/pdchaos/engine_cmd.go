package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type engineFlags struct {
	runLabel    string // only marks the process; see contract.RunLabelFlag
	configJSON  string // contract.EngineConfigFlag
	cfg         contract.EngineConfig
	role        string
	regressions []string
	profile     string
	allowRemote bool
	listen      string
	bootstrap   string
	control     []string
	notify      []string
	kv          []string
	prefillHTTP string
	prefillBoot string
	decodeHTTP  string
	verbose     bool
	clockStep   time.Duration // contract.ClockStepFlag
}

func newEngineCmd() *cobra.Command {
	var f engineFlags
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Run the bundled PD engine (all roles in one process, or one role with --role)",
		Long: `Run the bundled prefill/decode engine.

With no --role, router, prefill and decode run in this process on loopback
ports chosen by the OS. With --role, one role runs; give it its peers'
addresses (the router needs --prefill-http, --prefill-bootstrap and
--decode-http). When ready, one JSON line with every listening address is
printed to stdout. Known upstream races are switched on with --regression
NAME (repeatable); --regression list prints them. --profile NAME switches
on, as one set, the races an upstream build's defaults still have and the
wire it speaks (--profile list prints them). --wire chooses the
control-message dialect (nixl or mooncake); every role of one deployment
must run with the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.regressions) == 1 && f.regressions[0] == "list" {
				printRegressions(cmd.OutOrStdout())
				return nil
			}
			if f.profile == "list" {
				printProfiles(cmd.OutOrStdout())
				return nil
			}
			if err := applyEngineConfig(cmd.Flags(), &f); err != nil {
				return &exitError{exitHarness, err}
			}
			return runEngine(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	addEngineFlags(cmd.Flags(), &f)
	return cmd
}

// addEngineFlags registers `pdchaos engine`'s flags on fl, into f.
func addEngineFlags(fl *pflag.FlagSet, f *engineFlags) {
	fl.StringVar(&f.role, "role", "", "role to run: router, prefill or decode (empty: all in one process)")
	fl.StringArrayVar(&f.regressions, "regression", nil, "switch on a known regression by name (repeatable; 'list' prints them)")
	fl.StringVar(&f.profile, "profile", "", "switch on an upstream build's default-build races and its wire as one set ("+
		strings.Join(contract.ProfileNames(), ", ")+"; 'list' prints them); adds to --regression")
	// No default here: an explicit --wire that contradicts --profile is an
	// error, and the flag cannot tell an explicit nixl from a default one.
	fl.StringVar((*string)(&f.cfg.Wire), "wire", "", "control-message dialect, the same for every role: nixl or mooncake (empty: the profile's, else nixl)")
	// Every other setting's default is Resolve's (one list of them);
	// TestEngineFlagsCoverConfig checks each setting has its flag.
	def := contract.DefaultEngineConfig()
	fl.StringVar(&f.cfg.Model, "model", def.Model, "model id served and the model_name label of every metric")
	fl.StringVar((*string)(&f.cfg.Gauges), "gauges", string(def.Gauges),
		"when SGLang's gauges are set: live (at every scrape) or logged (at SGLang's log points, so they can be stale)")
	fl.IntVar(&f.cfg.DecodeLogInterval, "decode-log-interval", def.DecodeLogInterval, "logged gauges: decode batches between decode's gauge updates")
	fl.DurationVar(&f.cfg.IdleMetricsInterval, "idle-metrics-interval", def.IdleMetricsInterval,
		"logged gauges: how often an idle role refreshes them (never while a queue is busy)")
	fl.BoolVar(&f.cfg.NoLoads, "no-loads", def.NoLoads, "serve no GET /v1/loads (as SGLang builds before it)")
	fl.IntVar(&f.cfg.TP, "tp", def.TP, "tensor-parallel ranks on each side (must divide 16)")
	fl.IntVar(&f.cfg.TransferWorkers, "transfer-workers", def.TransferWorkers, "transfer workers per prefill rank")
	fl.IntVar(&f.cfg.PageSize, "page-size", def.PageSize, "tokens per KV page")
	fl.IntVar(&f.cfg.ChunkPages, "chunk-pages", def.ChunkPages, "KV pages per transfer chunk")
	fl.IntVar(&f.cfg.KVPostedWrites, "kv-posted-writes", def.KVPostedWrites,
		fmt.Sprintf("KV writes of one room a transfer worker keeps outstanding, each on its own connection (at most %d)", contract.MaxKVPostedWrites))
	fl.DurationVar(&f.cfg.KVWriteLatency, "kv-write-latency", def.KVWriteLatency, "how long a posted KV write is on the wire: its bytes land on decode half-way, its completion comes back at the end (0: at once)")
	fl.IntVar(&f.cfg.PushQueueLen, "push-queue-len", def.PushQueueLen,
		fmt.Sprintf("control messages queued per ZMTP peer (decode to a prefill rank, prefill to a decode rank) before more are dropped, like ZMQ_SNDHWM (at most %d)", contract.MaxPushQueueLen))
	fl.IntVar(&f.cfg.MaxNewTokens, "max-new-tokens", def.MaxNewTokens, "tokens generated when a request does not say")
	fl.IntVar(&f.cfg.Pages, "pages", def.Pages, "decode KV pages per rank")
	fl.Float64Var(&f.cfg.PrefillTokensPerSec, "prefill-tokens-per-sec", def.PrefillTokensPerSec, "prefill speed (0: as fast as possible)")
	fl.Float64Var(&f.cfg.DecodeTokensPerSec, "decode-tokens-per-sec", def.DecodeTokensPerSec, "decode steps per second (0: as fast as possible)")
	fl.DurationVar(&f.cfg.BootstrapTimeout, "bootstrap-timeout", def.BootstrapTimeout, "prefill bootstrap deadline (fixed engine)")
	fl.DurationVar(&f.cfg.InflightTimeout, "inflight-timeout", def.InflightTimeout, "prefill inflight deadline (fixed engine)")
	fl.DurationVar(&f.cfg.WaitingTimeout, "waiting-timeout", def.WaitingTimeout, "decode waiting-for-KV deadline (fixed engine)")
	fl.DurationVar(&f.cfg.AckTimeout, "ack-timeout", def.AckTimeout, "how long decode holds an aborted room's pages for prefill's ACK")
	fl.DurationVar(&f.cfg.HeartbeatInterval, "heartbeat-interval", def.HeartbeatInterval, "how often decode checks each prefill's bootstrap /health (two misses in a row fail its rooms)")
	fl.DurationVar(&f.cfg.CheckInterval, "check-interval", def.CheckInterval, "how often idle loops look for work (deadlines, queues)")
	fl.Uint64Var(&f.cfg.Seed, "seed", def.Seed, "seed for the router's bootstrap rooms")
	fl.StringVar(&f.cfg.Host, "host", def.Host, "address every role listens on")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow listening on or dialling non-loopback addresses")
	fl.StringVar(&f.listen, "listen", "", "HTTP listen address of the role (router or engine); empty: OS-chosen")
	fl.StringVar(&f.bootstrap, "bootstrap-listen", "", "prefill: bootstrap server address")
	fl.StringSliceVar(&f.control, "control-listen", nil, "prefill: control socket address per rank")
	fl.StringSliceVar(&f.notify, "notify-listen", nil, "decode: notify socket address per rank")
	fl.StringSliceVar(&f.kv, "kv-listen", nil, "decode: KV listener address per rank")
	fl.StringVar(&f.prefillHTTP, "prefill-http", "", "router: prefill HTTP host:port")
	fl.StringVar(&f.prefillBoot, "prefill-bootstrap", "", "router: prefill bootstrap host:port")
	fl.StringVar(&f.decodeHTTP, "decode-http", "", "router: decode HTTP host:port")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log engine events to stderr")
	fl.StringVar(&f.configJSON, contract.EngineConfigFlag, "", "the whole engine config as JSON (a scenario's engine: section, durations in nanoseconds); unknown keys refused; not with the per-setting flags (the harness starts role processes with it)")
	fl.DurationVar(&f.clockStep, contract.ClockStepFlag, 0, "prefill, decode: how far the host's wall clock has stepped since the run began; the role's room times start that much behind it (set by the harness)")
	fl.StringVar(&f.runLabel, contract.RunLabelFlag, "", "the run that started this role (set by the harness; 'pdchaos faults reset --leftovers' finds roles by it)")
}

// notConfigFlags are engine flags that are not engine settings: where a
// role listens, its peers, logging, marking. They may go with --engine-config.
var notConfigFlags = []string{"role", "listen", "bootstrap-listen", "control-listen", "notify-listen", "kv-listen",
	"prefill-http", "prefill-bootstrap", "decode-http", "verbose", "allow-remote", contract.RunLabelFlag, contract.EngineConfigFlag, contract.ClockStepFlag}

// applyEngineConfig puts --engine-config's config in f. A per-setting
// flag given with it is refused by name rather than merged: which of the
// two would win is a guess the user should not have to make.
func applyEngineConfig(fl *pflag.FlagSet, f *engineFlags) error {
	if f.configJSON == "" {
		return nil
	}
	var clash []string
	fl.Visit(func(g *pflag.Flag) {
		if !slices.Contains(notConfigFlags, g.Name) {
			clash = append(clash, "--"+g.Name)
		}
	})
	if len(clash) > 0 {
		return fmt.Errorf("--%s and %s: give the settings one way, not both", contract.EngineConfigFlag, strings.Join(clash, ", "))
	}
	dec := json.NewDecoder(strings.NewReader(f.configJSON))
	dec.DisallowUnknownFields()
	var cfg contract.EngineConfig
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("--%s: %w", contract.EngineConfigFlag, err)
	}
	if dec.More() {
		return fmt.Errorf("--%s: more than one JSON value", contract.EngineConfigFlag)
	}
	if _, _, err := cfg.Resolve(); err != nil {
		return fmt.Errorf("--%s: %w", contract.EngineConfigFlag, err)
	}
	f.cfg, f.regressions, f.profile = cfg, cfg.Regressions, cfg.Profile
	return nil
}

// checkLoopback refuses non-loopback addresses unless allowed: pdchaos
// sends chaos traffic, and a typo must not aim it at a real network.
func checkLoopback(allow bool, what string, addrs ...string) error {
	if allow {
		return nil
	}
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host := a
		if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if host == "localhost" {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%s %q is not a loopback address (pass --allow-remote to use it)", what, a)
		}
	}
	return nil
}

func runEngine(ctx context.Context, out io.Writer, f engineFlags) error {
	f.cfg.Regressions = f.regressions
	f.cfg.Profile = f.profile
	if err := checkLoopback(f.allowRemote, "--host", f.cfg.Host); err != nil {
		return &exitError{exitHarness, err}
	}
	if err := checkLoopback(f.allowRemote, "peer address", f.prefillHTTP, f.prefillBoot, f.decodeHTTP); err != nil {
		return &exitError{exitHarness, err}
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var ready any
	var closer func(context.Context) error
	switch f.role {
	case "":
		c, err := engine.StartCluster(ctx, f.cfg, log)
		if err != nil {
			return &exitError{exitHarness, err}
		}
		ready = map[string]any{"role": "cluster", "router": c.Endpoint(), "prefill": c.Prefill.Addrs(), "decode": c.Decode.Addrs(), "links": c.Links()}
		closer = c.Close
	case "prefill":
		p, err := engine.StartPrefillWith(ctx, f.cfg, engine.PrefillAddrs{HTTP: f.listen, Bootstrap: f.bootstrap, Control: f.control},
			engine.RoleOptions{Log: log, ClockStep: f.clockStep})
		if err != nil {
			return &exitError{exitHarness, err}
		}
		ready = map[string]any{"role": "prefill", "prefill": p.Addrs(), "pid": os.Getpid()}
		closer = p.Close
	case "decode":
		d, err := engine.StartDecodeWith(ctx, f.cfg, engine.DecodeAddrs{HTTP: f.listen, Notify: f.notify, KV: f.kv},
			engine.RoleOptions{Log: log, ClockStep: f.clockStep})
		if err != nil {
			return &exitError{exitHarness, err}
		}
		ready = map[string]any{"role": "decode", "decode": d.Addrs(), "pid": os.Getpid()}
		closer = d.Close
	case "router":
		rt, err := engine.StartRouter(ctx, f.cfg, engine.RouterConfig{Listen: f.listen, PrefillHTTP: f.prefillHTTP, PrefillBootstrap: f.prefillBoot, DecodeHTTP: f.decodeHTTP}, log)
		if err != nil {
			return &exitError{exitHarness, err}
		}
		ready = map[string]any{"role": "router", "router": "http://" + rt.Addr(), "pid": os.Getpid()}
		closer = rt.Close
	default:
		return &exitError{exitHarness, fmt.Errorf("unknown --role %q (want router, prefill, decode, or empty for all)", f.role)}
	}
	b, _ := json.Marshal(ready)
	fmt.Fprintln(out, string(b))
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return closer(cctx)
}
