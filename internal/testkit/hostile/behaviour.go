package hostile

import "fmt"

// Behaviour names one way a Server misbehaves.
type Behaviour string

// The behaviours, one per row of the hostile-target matrix.
const (
	// Healthy answers every endpoint well: the control row, on which the
	// harness may pass.
	Healthy Behaviour = "healthy"
	// Silent accepts connections and never answers (never reads either).
	Silent Behaviour = "silent"
	// Trickle answers correctly, one byte per Options.Tick.
	Trickle Behaviour = "trickle"
	// Endless answers 200 and streams a body (metrics, rooms JSON, SSE
	// chunks, "ok") that never ends.
	Endless Behaviour = "endless"
	// Huge answers 200 with a body of Options.HugeBytes (1 GiB), generated
	// as it is written: metric lines of distinct families, a rooms array.
	Huge Behaviour = "huge"
	// NaNMetrics is healthy, but every slot gauge is NaN.
	NaNMetrics Behaviour = "nan-metrics"
	// InfMetrics is healthy, but every slot gauge is +Inf.
	InfMetrics Behaviour = "inf-metrics"
	// NegativeGauges is healthy, but every slot gauge is -1, steadily (so a
	// comparison with the baseline alone would call it settled).
	NegativeGauges Behaviour = "negative-gauges"
	// DuplicateSeries is healthy, but every slot gauge's one series comes
	// twice, 0 and 3 (contradictory values for one label set).
	DuplicateSeries Behaviour = "duplicate-series"
	// GarbageMetrics is healthy, but /metrics is not Prometheus text.
	GarbageMetrics Behaviour = "garbage-metrics"
	// Reset answers 200 with a Content-Length it never reaches: it sends the
	// headers and a few bytes, then resets the connection (RST).
	Reset Behaviour = "reset"
	// Flap alternates per endpoint: the first request of each path is
	// answered well, the second gets 503, and so on.
	Flap Behaviour = "flap"
)

// Behaviours lists every behaviour, the control row first.
func Behaviours() []Behaviour {
	return []Behaviour{Healthy, Silent, Trickle, Endless, Huge, NaNMetrics, InfMetrics, NegativeGauges,
		DuplicateSeries, GarbageMetrics, Reset, Flap}
}

// MetricsOnly reports whether b misbehaves on /metrics alone.
func (b Behaviour) MetricsOnly() bool {
	switch b {
	case NaNMetrics, InfMetrics, NegativeGauges, DuplicateSeries, GarbageMetrics:
		return true
	}
	return false
}

// Parse returns the behaviour named s, or an error listing the known ones.
func Parse(s string) (Behaviour, error) {
	for _, b := range Behaviours() {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("hostile behaviour %q: want one of %v", s, Behaviours())
}
