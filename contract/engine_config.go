package contract

import (
	"fmt"
	"time"
)

// EngineConfig configures the bundled engine: what a scenario's `engine:`
// block and `pdchaos engine` flags may set. It lives in the contract so the
// harness validates a scenario exactly as the engine will (Resolve) without
// importing the engine runtime. Zero values take the documented defaults,
// so EngineConfig{} is a working fast engine for tests.
type EngineConfig struct {
	// Model is the model_name label and the model id served; default "pdchaos-fake".
	Model string `yaml:"model" json:"model"`
	// TP is the number of tensor-parallel ranks on each side; default 1.
	TP int `yaml:"tp" json:"tp"`
	// TransferWorkers per prefill rank; default 4.
	TransferWorkers int `yaml:"transfer_workers" json:"transfer_workers"`
	// PageSize is tokens per KV page; default 16.
	PageSize int `yaml:"page_size" json:"page_size"`
	// ChunkPages is pages per KV transfer chunk; default 4.
	ChunkPages int `yaml:"chunk_pages" json:"chunk_pages"`
	// KVPostedWrites is how many KV writes of one room a transfer worker
	// keeps outstanding at once, each on its own connection (an RDMA rail),
	// so their completions can come back out of order; the room's
	// completion notice (aux) waits for all of them. Default 1: one write
	// at a time, in chunk order. At most MaxKVPostedWrites.
	KVPostedWrites int `yaml:"kv_posted_writes" json:"kv_posted_writes"`
	// KVWriteLatency is how long a posted KV write is on the wire, from
	// the transfer worker's last look at the room to the completion it
	// gets back: a real model's KV for a chunk is megabytes, so an RDMA
	// write is in flight for milliseconds and an abort can overtake it
	// (the windows free-before-ack, status-resurrection and
	// unknown-room-waiting race in). The bytes land on decode half-way
	// through. Default 0: at once.
	KVWriteLatency time.Duration `yaml:"kv_write_latency" json:"kv_write_latency"`
	// PushQueueLen is how many control messages a role queues for one
	// peer's ZMTP PUSH sender while it dials or writes (decode's
	// registrations, TransferInfo and ABORTs to a prefill rank; prefill's
	// statuses and ABORT_ACKs to a decode rank), like a ZeroMQ PUSH
	// socket's send high-water mark (ZMQ_SNDHWM, 1000 in libzmq): past it
	// a message is dropped and counted (the probes
	// decode/control-queue-full and prefill/notice-queue-full), and the
	// engine's deadlines end the rooms it would have moved. Default
	// DefaultPushQueueLen; at most MaxPushQueueLen.
	PushQueueLen int `yaml:"push_queue_len" json:"push_queue_len"`
	// Pages is the decode KV pool per rank; default 16384.
	Pages int `yaml:"pages" json:"pages"`
	// MaxNewTokens is used when a request does not say; default 16.
	MaxNewTokens int `yaml:"max_new_tokens" json:"max_new_tokens"`
	// PrefillTokensPerSec paces forward passes; 0 = as fast as possible.
	PrefillTokensPerSec float64 `yaml:"prefill_tokens_per_sec" json:"prefill_tokens_per_sec"`
	// DecodeTokensPerSec paces decode steps; 0 = as fast as possible.
	DecodeTokensPerSec float64 `yaml:"decode_tokens_per_sec" json:"decode_tokens_per_sec"`
	// BootstrapTimeout, InflightTimeout (prefill) and WaitingTimeout (decode)
	// are the fixed engine's deadlines; default 10s each. AckTimeout bounds
	// how long decode holds an aborted room's pages waiting for prefill's
	// ACK; default 5s.
	BootstrapTimeout time.Duration `yaml:"bootstrap_timeout" json:"bootstrap_timeout"`
	InflightTimeout  time.Duration `yaml:"inflight_timeout" json:"inflight_timeout"`
	WaitingTimeout   time.Duration `yaml:"waiting_timeout" json:"waiting_timeout"`
	AckTimeout       time.Duration `yaml:"ack_timeout" json:"ack_timeout"`
	// Regressions switches known upstream races back on, by name.
	Regressions []string `yaml:"regressions" json:"regressions"`
	// Profile names an upstream build (Profiles(): "sglang-nixl",
	// "sglang-mooncake") whose default-build races and wire dialect are
	// switched on as one set; Regressions adds to it, and a Wire that
	// differs from the profile's is an error. Empty: no profile.
	Profile string `yaml:"profile,omitempty" json:"profile,omitempty"`
	// Wire is the dialect of the decode↔prefill control messages:
	// "nixl" (default: guard frame first on registration and TransferInfo)
	// or "mooncake" (no guard: "None" or the room first). Prefill and decode
	// must run with the same one.
	Wire Wire `yaml:"wire" json:"wire"`
	// Host is where every role listens; default 127.0.0.1.
	Host string `yaml:"host" json:"host"`
	// Seed drives the router's room choice; 0 picks 1.
	Seed uint64 `yaml:"seed" json:"seed"`
	// HeartbeatInterval is how often decode checks each prefill's bootstrap
	// /health; two misses in a row fail the rooms paired with it. Default 1s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval" json:"heartbeat_interval"`
	// CheckInterval is how often idle loops look for work (deadlines,
	// queues); default 5ms.
	CheckInterval time.Duration `yaml:"check_interval" json:"check_interval"`
	// Gauges is when SGLang's gauges (the sglang:* families) are set:
	// "live" (default: at every scrape) or "logged" (where SGLang logs
	// stats, so they can be stale; GaugesLogged says when).
	Gauges GaugeMode `yaml:"gauges" json:"gauges"`
	// DecodeLogInterval is, with logged gauges, how many decode batches go
	// between decode's gauge updates; default 40, SGLang's
	// --decode-log-interval.
	DecodeLogInterval int `yaml:"decode_log_interval" json:"decode_log_interval"`
	// IdleMetricsInterval is, with logged gauges, how often an idle role
	// refreshes them (never while one of its queues is busy); default 30s,
	// as SGLang. Tests use small values.
	IdleMetricsInterval time.Duration `yaml:"idle_metrics_interval" json:"idle_metrics_interval"`
	// NoLoads serves no GET /v1/loads, as SGLang builds before it did, so
	// the harness must judge by the gauges alone; default false (served).
	NoLoads bool `yaml:"no_loads" json:"no_loads"`
}

// MaxKVPostedWrites bounds EngineConfig.KVPostedWrites: each is a
// connection per transfer worker.
const MaxKVPostedWrites = 16

// DefaultPushQueueLen is EngineConfig.PushQueueLen's default: deep enough
// that no burst of one healthy run fills it.
const DefaultPushQueueLen = 8192

// MaxPushQueueLen bounds EngineConfig.PushQueueLen: each peer's queue is
// allocated whole when its sender starts.
const MaxPushQueueLen = 1 << 16

// DefaultEngineConfig is the zero config resolved: every setting's
// default, from Resolve's one list of them (flags and docs derive theirs
// from it rather than repeat it).
func DefaultEngineConfig() EngineConfig {
	c, _, err := EngineConfig{}.Resolve()
	if err != nil {
		panic("contract: the zero EngineConfig does not resolve: " + err.Error()) // a defect in Resolve's defaults
	}
	return c
}

// Resolve validates c and fills in defaults. An error names the field by
// its YAML key (e.g. "tp: 3 must divide 16"); nothing is half-applied. A
// profile is expanded (WithProfile): the returned config lists every
// regression it switches on and speaks its wire.
func (c EngineConfig) Resolve() (EngineConfig, Regressions, error) {
	for _, f := range []struct {
		key string
		v   int
	}{{"tp", c.TP}, {"transfer_workers", c.TransferWorkers}, {"page_size", c.PageSize}, {"chunk_pages", c.ChunkPages},
		{"pages", c.Pages}, {"max_new_tokens", c.MaxNewTokens}, {"decode_log_interval", c.DecodeLogInterval},
		{"kv_posted_writes", c.KVPostedWrites}, {"push_queue_len", c.PushQueueLen}} {
		if f.v < 0 {
			return c, nil, fmt.Errorf("%s: %d must not be negative (0 takes the default)", f.key, f.v)
		}
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"bootstrap_timeout", c.BootstrapTimeout}, {"inflight_timeout", c.InflightTimeout}, {"waiting_timeout", c.WaitingTimeout},
		{"ack_timeout", c.AckTimeout}, {"kv_write_latency", c.KVWriteLatency}, {"heartbeat_interval", c.HeartbeatInterval}, {"check_interval", c.CheckInterval},
		{"idle_metrics_interval", c.IdleMetricsInterval}} {
		if f.v < 0 {
			return c, nil, fmt.Errorf("%s: %v must not be negative (0 takes the default)", f.key, f.v)
		}
	}
	if c.PrefillTokensPerSec < 0 || c.DecodeTokensPerSec < 0 {
		return c, nil, fmt.Errorf("prefill_tokens_per_sec, decode_tokens_per_sec: must not be negative (0 is as fast as possible)")
	}
	if c.Model == "" {
		c.Model = "pdchaos-fake"
	}
	if c.TP == 0 {
		c.TP = 1
	}
	if 16%c.TP != 0 {
		return c, nil, fmt.Errorf("tp: %d must divide 16", c.TP)
	}
	if c.TransferWorkers == 0 {
		c.TransferWorkers = 4
	}
	if c.PageSize == 0 {
		c.PageSize = 16
	}
	if c.ChunkPages == 0 {
		c.ChunkPages = 4
	}
	if c.Pages == 0 {
		c.Pages = 16384
	}
	if c.KVPostedWrites == 0 {
		c.KVPostedWrites = 1
	}
	if c.KVPostedWrites > MaxKVPostedWrites {
		return c, nil, fmt.Errorf("kv_posted_writes: %d is over the limit of %d", c.KVPostedWrites, MaxKVPostedWrites)
	}
	if c.PushQueueLen == 0 {
		c.PushQueueLen = DefaultPushQueueLen
	}
	if c.PushQueueLen > MaxPushQueueLen {
		return c, nil, fmt.Errorf("push_queue_len: %d is over the limit of %d", c.PushQueueLen, MaxPushQueueLen)
	}
	if c.MaxNewTokens == 0 {
		c.MaxNewTokens = 16
	}
	for _, d := range []*time.Duration{&c.BootstrapTimeout, &c.InflightTimeout, &c.WaitingTimeout} {
		if *d == 0 {
			*d = 10 * time.Second
		}
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 5 * time.Second
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = time.Second
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 5 * time.Millisecond
	}
	c, err := c.WithProfile()
	if err != nil {
		return c, nil, fmt.Errorf("profile: %w", err)
	}
	w, err := ParseWire(string(c.Wire))
	if err != nil {
		return c, nil, fmt.Errorf("wire: %w", err)
	}
	c.Wire = w
	g, err := ParseGaugeMode(string(c.Gauges))
	if err != nil {
		return c, nil, fmt.Errorf("gauges: %w", err)
	}
	c.Gauges = g
	if c.DecodeLogInterval == 0 {
		c.DecodeLogInterval = DefaultDecodeLogInterval
	}
	if c.IdleMetricsInterval == 0 {
		c.IdleMetricsInterval = DefaultIdleMetricsInterval
	}
	reg, err := ParseRegressions(c.Regressions)
	if err != nil {
		return c, nil, fmt.Errorf("regressions: %w", err)
	}
	return c, reg, nil
}
