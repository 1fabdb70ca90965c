package mutate

import (
	"slices"
	"testing"
)

// parseSim reads what `pdchaos sim --probes` prints: the summary, the
// failing checkers by seeds and the probes hit; no summary is a crash.
func TestParseSim(t *testing.T) {
	t.Parallel()
	out := []byte(`seed 4: FAIL rooms-terminal: 2 rooms still held after the drain
abort-storm: 10 seeds, 3 failing, 129ms wall (31.0 seeds/s, 620 simulated requests, 4811 simulated requests/s, 2 workers)
  liveness failed in 1 seeds
  rooms-terminal failed in 3 seeds
  slots-released failed in 3 seeds
replay: pdchaos sim abort-storm --seed 4 --trace
code probes: 2 of 121 hit
    decode/abort                                         10 seeds
  - decode/abort-after-finish                            0 seeds
    prefill/local-abort                                  7 seeds
`)
	s, ok := parseSim(out)
	if !ok || s.seeds != 10 || s.failing != 3 {
		t.Fatalf("summary: ok %v, %d seeds, %d failing; want 10 and 3", ok, s.seeds, s.failing)
	}
	if got := s.checkers(); !slices.Equal(got, []string{"rooms-terminal", "slots-released", "liveness"}) {
		t.Errorf("checkers %v; want most seeds first, ties by name", got)
	}
	if s.probes["decode/abort"] != 10 || s.probes["prefill/local-abort"] != 7 || len(s.probes) != 2 {
		t.Errorf("probes %v; want the two hit ones only", s.probes)
	}
	if _, ok := parseSim([]byte("panic: runtime error: index out of range\n")); ok {
		t.Error("a panic's output parsed as a summary")
	}
}

func TestSimulated(t *testing.T) {
	t.Parallel()
	if !Simulated(Mutant{File: "engine/core/prefill.go"}) || Simulated(Mutant{File: "engine/prefill.go"}) {
		t.Error("Simulated: want engine/core files only")
	}
}
