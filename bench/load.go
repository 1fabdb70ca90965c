package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"
)

// loadResult is one closed-loop load point: conc clients each sending the
// next request as soon as the last one ended.
type loadResult struct {
	ok, failed int
	wall, cpu  time.Duration
	latencies  []time.Duration
	firstErr   error
}

func (r loadResult) rps() float64 { return float64(r.ok) / r.wall.Seconds() }

func (r loadResult) cpuPerReq() float64 {
	if r.ok == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.ok)
}

func (r loadResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// closedLoop posts body to url from conc clients for d and reads every
// answer whole. CPU is the whole process's (client and any in-process
// server), which is what the engine-versus-bare-handler ratio compares.
func closedLoop(ctx context.Context, url string, body []byte, conc int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	cpu0, t0 := processCPU(), time.Now()
	for range conc {
		wg.Go(func() {
			var lat []time.Duration
			ok, failed := 0, 0
			var firstErr error
			for ctx.Err() == nil {
				start := time.Now()
				err := post(ctx, client, url, body)
				if ctx.Err() != nil {
					break // cut by the end of the point, not a failure
				}
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				ok++
				lat = append(lat, time.Since(start))
			}
			mu.Lock()
			res.ok += ok
			res.failed += failed
			res.latencies = append(res.latencies, lat...)
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.wall, res.cpu = time.Since(t0), processCPU()-cpu0
	return res
}

func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// processCPU is the user+system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
