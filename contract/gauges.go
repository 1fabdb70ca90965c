package contract

import (
	"fmt"
	"strings"
	"time"
)

// GaugeMode says when an engine sets its queue gauges. Real SGLang sets
// them only when it logs stats (sglang-wire.md section 5), so a scrape can
// read a value seconds old; the bundled engine can do either, so the
// harness is proven against both.
type GaugeMode string

// Gauge modes.
const (
	// GaugesLive computes every gauge at scrape time (the default): a
	// gauge is never stale.
	GaugesLive GaugeMode = "live"
	// GaugesLogged sets SGLang's gauges (the sglang:* families) only where
	// SGLang logs stats: after every prefill batch, every
	// DecodeLogInterval decode batches, and when idle at most every
	// IdleMetricsInterval, never while a queue is busy. A healthy engine
	// then shows a non-zero gauge for up to IdleMetricsInterval after
	// traffic stops, and a stuck queue freezes at a stale value.
	GaugesLogged GaugeMode = "logged"
)

// GaugeModes lists every mode, default first.
func GaugeModes() []GaugeMode { return []GaugeMode{GaugesLive, GaugesLogged} }

// ParseGaugeMode resolves a mode name; empty means GaugesLive.
func ParseGaugeMode(name string) (GaugeMode, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return GaugesLive, nil
	}
	for _, m := range GaugeModes() {
		if string(m) == name {
			return m, nil
		}
	}
	return "", fmt.Errorf("%q is not a gauge mode (live or logged)", name)
}

// SGLang's defaults for when it logs stats (and so sets its gauges).
const (
	// DefaultDecodeLogInterval is SGLang's --decode-log-interval: decode
	// logs (and sets gauges) once per this many decode batches.
	DefaultDecodeLogInterval = 40
	// DefaultIdleMetricsInterval is how long an idle SGLang scheduler goes
	// between gauge refreshes (_maybe_log_idle_metrics).
	DefaultIdleMetricsInterval = 30 * time.Second
)

// Keys of /get_server_info that say how an engine sets its gauges.
// SGLang's server info is its server arguments, which include
// decode_log_interval; it has no gauge-mode key (it is always logged) and
// no idle interval (fixed at 30 s), so those two are pdchaos additions, and
// a target whose server info lacks ServerInfoGauges is taken as SGLang.
const (
	// ServerInfoGauges holds the GaugeMode (pdchaos only).
	ServerInfoGauges = "pdchaos_gauges"
	// ServerInfoDecodeLogInterval holds the decode log interval in batches (SGLang's key).
	ServerInfoDecodeLogInterval = "decode_log_interval"
	// ServerInfoIdleMetricsInterval holds the idle refresh in seconds (pdchaos only).
	ServerInfoIdleMetricsInterval = "idle_metrics_interval"
)
