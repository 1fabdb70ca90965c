package doctor_test

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/doctor"
	"github.com/pdchaos/pdchaos/harness/target"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// pdchaosBin is the CLI built once for the process-mode test ("" in -short).
var pdchaosBin string

func TestMain(m *testing.M) {
	code := func() int {
		flag.Parse()
		if !testing.Short() {
			dir, err := os.MkdirTemp("", "pdchaos-doctor")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			pdchaosBin = filepath.Join(dir, "pdchaos")
			if out, err := exec.Command("go", "build", "-o", pdchaosBin, "github.com/pdchaos/pdchaos/cmd/pdchaos").CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build pdchaos: %v\n%s", err, out)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func report(t *testing.T, r doctor.Report) string {
	t.Helper()
	var b strings.Builder
	r.Print(&b)
	t.Log("\n" + b.String())
	return b.String()
}

func TestDoctorBundledClusterEverythingApplies(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{})
	r := doctor.Run(t.Context(), c, doctor.Options{InProcess: true})
	out := report(t, r)
	if r.ExitCode() != doctor.ExitOK {
		t.Fatalf("exit %d, problems %q", r.ExitCode(), r.Problems())
	}
	for _, want := range []string{"health router: /readiness 200", "/health_generate 200", "version ", "fault layer protocol: applies"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestDoctorProcsTarget(t *testing.T) {
	if pdchaosBin == "" {
		t.Skip("-short: no pdchaos binary")
	}
	p, err := target.StartProcs(t.Context(), pdchaosBin, contract.EngineConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(t.Context()) })
	r := doctor.Run(t.Context(), p, doctor.Options{})
	out := report(t, r)
	if r.ExitCode() != doctor.ExitOK {
		t.Fatalf("exit %d, problems %q", r.ExitCode(), r.Problems())
	}
	for _, role := range []string{"router", "prefill", "decode"} {
		if !strings.Contains(out, "fault layer process: role "+role+": pid ") {
			t.Errorf("report lacks the process layer for %s", role)
		}
	}
}

// gauge is one Prometheus gauge line with its TYPE header.
func gauge(name, engineType string) string {
	return fmt.Sprintf("# TYPE %s gauge\n%s{engine_type=%q,tp_rank=\"0\"} 0\n", name, name, engineType)
}

func prefillMetrics(bootstrapName string) string {
	return gauge(bootstrapName, "prefill") + gauge(contract.MetricPrefillInflightQueue, "prefill") +
		gauge(contract.MetricRunning, "prefill") + gauge(contract.MetricQueue, "prefill")
}

func decodeMetrics(without string) string {
	var b strings.Builder
	for _, n := range []string{contract.MetricDecodePreallocQueue, contract.MetricDecodeTransferQueue, contract.MetricRunning, contract.MetricQueue} {
		if n != without {
			b.WriteString(gauge(n, "decode"))
		}
	}
	return b.String()
}

// engineServer is a crafted SGLang engine: /health_generate, server info
// and the given /metrics (empty: 404, as without --enable-metrics).
func engineServer(t *testing.T, mode, metrics string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case contract.PathHealthGenerate, contract.PathHealth:
		case contract.PathServerInfo:
			fmt.Fprintf(w, `{"version":"0.5.4","disaggregation_mode":%q}`, mode)
		case contract.PathMetrics:
			if metrics == "" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, metrics)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// routerServer is a crafted gateway answering /readiness with status
// (0: no /readiness at all, an older router) and /health with 200.
func routerServer(t *testing.T, readiness int) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == contract.PathReadiness && readiness != 0:
			w.WriteHeader(readiness)
			if readiness != 200 {
				fmt.Fprint(w, `{"status":"not ready","unhealthy":["decode: no healthy worker"]}`)
			}
		case r.URL.Path == contract.PathHealth:
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestDoctorCraftedSGLang: one clear line per problem and the exit code,
// for metrics off on one engine, a missing family, the old gauge name and
// an unready router. Every SGLang target lacks /debug/rooms, so
// rooms-terminal is always one reduced line.
func TestDoctorCraftedSGLang(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readiness int
		prefill   string
		decode    string
		exit      int
		want      []string // problem lines, besides rooms-terminal
	}{
		{name: "healthy", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitReduced},
		{name: "metrics off on decode", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: "",
			exit: doctor.ExitReduced, want: []string{"404: metrics are off: start this engine with --enable-metrics", "check slots-released: reduced"}},
		{name: "missing family", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(contract.MetricDecodeTransferQueue),
			exit: doctor.ExitReduced, want: []string{"no " + contract.MetricDecodeTransferQueue + " family", "check slots-released: reduced"}},
		{name: "old gauge name", readiness: 200, prefill: prefillMetrics("sglang:num_prefill_prealloc_queue_reqs"), decode: decodeMetrics(""),
			exit: doctor.ExitReduced, want: []string{"old gauge name sglang:num_prefill_prealloc_queue_reqs instead of " + contract.MetricPrefillBootstrapQueue, "check slots-released: reduced"}},
		{name: "router not ready", readiness: 503, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitUnusable, want: []string{"health router: /readiness status 503: {\"status\":\"not ready\""}},
		{name: "router without readiness", readiness: 0, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitReduced, want: []string{"health router: /health 200, but router has no /readiness"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, d := engineServer(t, "prefill", tc.prefill), engineServer(t, "decode", tc.decode)
			ext := &target.External{Router: routerServer(t, tc.readiness), Metrics: []string{p + "/metrics", d + "/metrics"}}
			r := doctor.Run(t.Context(), ext, doctor.Options{})
			out := report(t, r)
			if r.ExitCode() != tc.exit {
				t.Errorf("exit %d, want %d", r.ExitCode(), tc.exit)
			}
			want := append([]string{"check rooms-terminal: skipped: needs /debug/rooms"}, tc.want...)
			probs := r.Problems()
			if len(probs) != len(want) {
				t.Errorf("%d problems %q, want %d", len(probs), probs, len(want))
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			if !strings.Contains(out, "version "+p+": 0.5.4") {
				t.Error("report lacks the SGLang version")
			}
		})
	}
}
