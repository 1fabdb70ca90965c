package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/record"
)

const (
	// defaultWatchWindow is watch's wedge window where gauges are fresh.
	defaultWatchWindow = 10 * time.Second
	// defaultWatchInterval is watch's scrape period.
	defaultWatchInterval = record.DefaultInterval
)

// watchGauges works out how the watched engines set their gauges: from
// their server info for --gauges auto, else as the flag says; either way
// whether every engine serves live loads. run and doctor decide it with
// the same record.DetectGauges.
func watchGauges(ctx context.Context, flag string, metrics []string) (record.GaugeSource, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	switch flag {
	case "", "auto":
		return record.DetectGauges(ctx, client, metrics), nil
	case string(contract.GaugesLive):
		return record.GaugeSource{Mode: contract.GaugesLive, ModeFrom: "--gauges live"}.WithLoads(ctx, client, metrics), nil
	case string(contract.GaugesLogged):
		src := record.GaugeSource{Mode: contract.GaugesLogged, IdleRefresh: contract.DefaultIdleMetricsInterval,
			ModeFrom: "--gauges logged (SGLang's idle refresh)"}
		return src.WithLoads(ctx, client, metrics), nil
	}
	return record.GaugeSource{}, fmt.Errorf("watch: --gauges %q: want auto, live or logged", flag)
}

// watchWindow is the wedge window watch uses and the line it prints about
// it. Unset (0), it is defaultWatchWindow, widened to the time a logged
// engine's gauges may be stale when there are no live loads to read: a
// healthy SGLang shows a non-zero gauge for up to its idle refresh after
// traffic stops. A window the user set is kept, with a warning when the
// gauges can be stale longer.
func watchWindow(src record.GaugeSource, set, interval time.Duration) (time.Duration, string) {
	what := fmt.Sprintf("gauges %s (%s)", src.Mode, src.ModeFrom)
	if src.Mode == contract.GaugesLogged {
		what += fmt.Sprintf(", idle refresh %v; live loads: %s", src.IdleRefresh, src.LoadsWhy)
	}
	stale := src.StaleFor(interval)
	switch {
	case set > 0 && set < stale:
		return set, fmt.Sprintf("%s; window %v as given, WARNING: shorter than the %v these gauges may be stale, so a healthy engine can be flagged", what, set, stale)
	case set > 0:
		return set, fmt.Sprintf("%s; window %v as given", what, set)
	case stale > defaultWatchWindow:
		return stale, fmt.Sprintf("%s; window %v (widened from %v to idle refresh + 2 scrapes + 2s: gauges may be stale that long)", what, stale, defaultWatchWindow)
	}
	return defaultWatchWindow, fmt.Sprintf("%s; window %v", what, defaultWatchWindow)
}
