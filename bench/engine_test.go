package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// The engine part measures both sides of every point; speed is not judged
// here (that is what bench.json is for), only that each figure has its
// same-run reference and that answers really went through.
func TestEngineFiguresHaveReferences(t *testing.T) {
	figs, err := Engine(t.Context(), EngineOptions{Concurrency: []int{2}, Duration: 300 * time.Millisecond, MaxTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 8 { // {plain, stream} x {rps, p50, p99, cpu}
		t.Fatalf("%d figures, want 8: %+v", len(figs), figs)
	}
	for _, f := range figs {
		if f.RefName != "bare handler" || f.Reference <= 0 || f.Value <= 0 || f.Ratio <= 0 {
			t.Errorf("%s: value %v reference %q %v ratio %v, want all set", f.Name, f.Value, f.RefName, f.Reference, f.Ratio)
		}
	}
}

func TestSampleSelf(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // one sample now, one at the end
	if err := SampleSelf(ctx, &buf, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines, want 2:\n%s", n, buf.String())
	}
	s := readSelf(0)
	if s.RSS <= 0 || s.Goroutines <= 0 || s.OpenFiles < 3 {
		t.Errorf("self sample %+v: want RSS, goroutines and at least stdin/out/err", s)
	}
}
