package agents

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/fakeserver"
)

// benchRate is the request rate both benchmarks drive, so their CPU per
// request compares like with like.
const benchRate = 1000

// TestMain lets a benchmark re-run this binary as a trivial server in its own
// process, so that getrusage measures the client side only.
func TestMain(m *testing.M) {
	if os.Getenv("PDCHAOS_BENCH_SERVER") == "1" {
		s := fakeserver.New(fakeserver.Options{Trivial: true})
		fmt.Println(s.URL)
		_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent closes stdin
		s.Close()
		return
	}
	os.Exit(m.Run())
}

// benchServer starts the trivial server in a child process.
func benchServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "PDCHAOS_BENCH_SERVER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return line[:len(line)-1]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, n int64, wall, cpu time.Duration) {
	b.ReportMetric(float64(n)/wall.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/req")
	b.ReportMetric(float64(n)/cpu.Seconds(), "req/cpu-s")
}

// BenchmarkSwarm drives benchAgents agents whose think time makes them send
// benchRate requests/s in total (3000-word shared prompt, growing context,
// streamed answers) and reports client CPU per request and agents per core.
func BenchmarkSwarm(b *testing.B) {
	const benchAgents = 2000
	url := benchServer(b)
	var done atomic.Int64
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	s, err := New(Config{Endpoint: url, Seed: 1, Sink: func(outcome.Outcome) {
		if done.Add(1) == int64(b.N) {
			cancel()
		}
	}, Options: Options{Agents: benchAgents, StartSpread: time.Second, MaxTokens: 8,
		MaxContextWords: 2000, ThinkTime: time.Second * benchAgents / benchRate}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	if err := s.Run(ctx); err != nil {
		b.Fatal(err)
	}
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	st := s.Stats()
	report(b, st.Completed, wall, cpu)
	b.ReportMetric(benchAgents*wall.Seconds()/cpu.Seconds(), "agents/cpu-core")
}

// BenchmarkVegeta sends the same rate with vegeta alone (static 3000-word
// prompt, streamed answer read whole) for the same number of requests.
func BenchmarkVegeta(b *testing.B) {
	url := benchServer(b)
	body := chatBody([]byte(`"pdchaos"`), 8, "", 0, &entry{json: newEntry("system", SystemPrompt(1, 3000), 0, false).json}, nil)
	tr := newTransport(10000)
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tr}))
	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: url + contract.PathChatCompletions,
		Body: body, Header: http.Header{"Content-Type": {"application/json"}}})
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	var ok int64
	attack(b.Context(), atk, targeter, vegeta.Rate{Freq: benchRate, Per: time.Second},
		time.Duration(b.N)*time.Second/benchRate, "bench", func(r *vegeta.Result) {
			if r.Error == "" {
				ok++
			}
		})
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	report(b, ok, wall, cpu)
}
