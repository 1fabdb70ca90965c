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
}

// SampleSelf writes one JSON Sample line to w now and every `every` until
// ctx ends (then once more), so a stats file always has its last reading.
func SampleSelf(ctx context.Context, w io.Writer, every time.Duration) error {
	if every <= 0 {
		every = 10 * time.Second
	}
	start := time.Now()
	enc := json.NewEncoder(w)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := enc.Encode(readSelf(time.Since(start))); err != nil {
			return fmt.Errorf("write self stats: %w", err)
		}
		select {
		case <-ctx.Done():
			return enc.Encode(readSelf(time.Since(start)))
		case <-t.C:
		}
	}
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
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		x := p.At.Minutes()
		n++
		sx += x
		sy += p.V
		sxx += x * x
		sxy += x * p.V
	}
	if n < 3 || n*sxx-sx*sx == 0 {
		return 0, int(n)
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx), int(n)
}
