package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sample is one reading of a process's own resources.
type Sample struct {
	// At is the time since sampling started.
	At         time.Duration `json:"at_ns"`
	RSS        int64         `json:"rss_bytes"`
	Goroutines int           `json:"goroutines"`
	OpenFiles  int           `json:"open_files"`
	HeapInUse  uint64        `json:"heap_inuse_bytes"`
	// Mark names a reading taken at a moment the command chose rather than
	// by the clock: MarkBetweenRuns after a soak's run has closed its
	// target, when nothing of that run should be left. Run is its number.
	Mark string `json:"mark,omitempty"`
	Run  int    `json:"run,omitempty"`
}

// MarkBetweenRuns marks a soak's reading after one run ended and before
// the next starts.
const MarkBetweenRuns = "between-runs"

// Sampler writes Samples of this process as JSON lines, from a clock and
// on demand, one line at a time.
type Sampler struct {
	mu    sync.Mutex
	enc   *json.Encoder
	start time.Time
}

// NewSampler samples into w; offsets count from now.
func NewSampler(w io.Writer) *Sampler {
	return &Sampler{enc: json.NewEncoder(w), start: time.Now()}
}

// Sample writes one reading now, marked (mark may be empty).
func (s *Sampler) Sample(mark string, run int) error {
	r := readSelf(time.Since(s.start))
	r.Mark, r.Run = mark, run
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(r); err != nil {
		return fmt.Errorf("write self stats: %w", err)
	}
	return nil
}

// Run writes a reading now and every `every` until ctx ends, then once
// more, so a stats file always has its last reading.
func (s *Sampler) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.Sample("", 0); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return s.Sample("", 0)
		case <-t.C:
		}
	}
}

// SampleSelf is NewSampler(w).Run(ctx, every).
func SampleSelf(ctx context.Context, w io.Writer, every time.Duration) error {
	return NewSampler(w).Run(ctx, every)
}

func readSelf(at time.Duration) Sample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := Sample{At: at, Goroutines: runtime.NumGoroutine(), HeapInUse: ms.HeapInuse, RSS: -1, OpenFiles: -1}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				s.RSS = kb << 10
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.OpenFiles = len(ents) - 1 // less the directory handle ReadDir holds
	}
	return s
}

// ReadSamples loads a stats file written by SampleSelf.
func ReadSamples(path string) ([]Sample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read self stats: %w", err)
	}
	var out []Sample
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var s Sample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return out, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// at returns the last sample taken no later than d (the first if none).
func at(ss []Sample, d time.Duration) Sample {
	best := ss[0]
	for _, s := range ss {
		if s.At <= d {
			best = s
		}
	}
	return best
}

// point is one reading of one resource.
type point struct {
	At time.Duration
	V  float64
}

// series reads f of every sample taken at or after from.
func series(ss []Sample, from time.Duration, f func(Sample) float64) []point {
	var out []point
	for _, s := range ss {
		if s.At >= from {
			out = append(out, point{s.At, f(s)})
		}
	}
	return out
}

// slope is the least-squares growth per minute of pts, and how many points
// it rests on (no slope under three).
func slope(pts []point) (float64, int) {
	xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		xs[i], ys[i] = p.At.Minutes(), p.V
	}
	return fit(xs, ys)
}

// fit is the least-squares slope of ys over xs (0 under three points).
func fit(xs, ys []float64) (float64, int) {
	var n, sx, sy, sxx, sxy float64
	for i := range xs {
		x, y := xs[i], ys[i]
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if n < 3 || n*sxx-sx*sx == 0 {
		return 0, int(n)
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx), int(n)
}
