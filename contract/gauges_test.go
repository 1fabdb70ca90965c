package contract

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Gauges default to live with SGLang's log cadence; a bad mode or a
// negative interval is refused naming the field.
func TestConfigGauges(t *testing.T) {
	t.Parallel()
	c, _, err := EngineConfig{}.Resolve()
	if err != nil || c.Gauges != GaugesLive || c.DecodeLogInterval != 40 || c.IdleMetricsInterval != 30*time.Second {
		t.Fatalf("defaults: gauges %q every %d batches idle %v (%v), want live, 40, 30s", c.Gauges, c.DecodeLogInterval, c.IdleMetricsInterval, err)
	}
	c, _, err = EngineConfig{Gauges: GaugesLogged, IdleMetricsInterval: time.Second}.Resolve()
	if err != nil || c.Gauges != GaugesLogged || c.IdleMetricsInterval != time.Second {
		t.Fatalf("logged: %q %v (%v)", c.Gauges, c.IdleMetricsInterval, err)
	}
	for _, tc := range []struct {
		cfg  EngineConfig
		want string
	}{
		{EngineConfig{Gauges: "stale"}, "gauges"},
		{EngineConfig{DecodeLogInterval: -1}, "decode_log_interval"},
		{EngineConfig{IdleMetricsInterval: -time.Second}, "idle_metrics_interval"},
	} {
		if _, _, err := tc.cfg.Resolve(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// LiveGauges reads SGLang's shape: either bootstrap-queue name, waiting
// less the PD queues, and a rank without the disagg section refused.
func TestLoadsLiveGauges(t *testing.T) {
	t.Parallel()
	three := 3
	l := LoadsResponse{Loads: []RankLoad{
		{NumRunningReqs: 1, NumWaitingReqs: 9, TokenUsage: 0.5, Disaggregation: &DisaggLoad{Mode: "prefill", PrefillPreallocQueueReqs: 2, PrefillInflightQueueReqs: 4}},
		{NumRunningReqs: 2, NumWaitingReqs: 3, TokenUsage: 0.1, Disaggregation: &DisaggLoad{Mode: "prefill", PrefillBootstrapQueueReqs: &three}},
	}}
	g, ok := l.LiveGauges()
	if !ok {
		t.Fatal("two ranks with disagg sections: not ok")
	}
	want := map[string]float64{MetricPrefillBootstrapQueue: 5, MetricPrefillInflightQueue: 4, MetricRunning: 3, MetricQueue: 3, MetricTokenUsage: 0.3}
	for k, v := range want {
		if d := g[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %g, want %g", k, g[k], v)
		}
	}
	l.Loads[1].Disaggregation = nil
	if _, ok := l.LiveGauges(); ok {
		t.Error("a rank without the disaggregation section read as ok (missing queues would read as 0)")
	}
	if _, ok := (LoadsResponse{}).LiveGauges(); ok {
		t.Error("no ranks read as ok")
	}
}

// The engine's table gauges are pdchaos's own (never needed, so SGLang
// loses nothing), each exported (EngineGauges) and documented in
// docs/ARCHITECTURE.md's table of them, on the row that gives its rule.
func TestEngineTablesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := map[TableRule]string{TableBaseline: "back to", TableNotOverdue: "0 in every scrape", TableTimeBounded: "time-bounded"}
	exported := map[string]bool{}
	for _, g := range EngineGauges() {
		exported[g] = true
	}
	needed := map[string]bool{}
	for _, et := range []string{"prefill", "decode", ""} {
		for _, g := range NeededGauges(et) {
			needed[g] = true
		}
	}
	for _, tb := range append(EngineTables(), EngineTable{MetricTransferWorkersBusy, TableBaseline}) {
		if !strings.HasPrefix(tb.Gauge, "pdchaos:") || needed[tb.Gauge] || !exported[tb.Gauge] {
			t.Errorf("%s: want a pdchaos: name, exported, never needed", tb.Gauge)
		}
		row := ""
		for _, l := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(l, "| ") && strings.Contains(l, "`"+tb.Gauge+"`") {
				row = l
			}
		}
		if !strings.Contains(row, rules[tb.Rule]) {
			t.Errorf("%s: docs/ARCHITECTURE.md has no table row giving its rule %q (row %q)", tb.Gauge, rules[tb.Rule], row)
		}
	}
}
