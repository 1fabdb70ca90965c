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
	for _, want := range []string{"health router: /readiness 200", "/health_generate 200", "version ", "fault layer protocol: applies",
		"gauges live (", "pdchaos_gauges=live): judged as scraped",
		fmt.Sprintf("all %d pdchaos engine table gauges: slots-released judges them", len(contract.TableGauges())+len(contract.OverdueGauges())+1)} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A logged engine that serves /v1/loads is judged by them, with the
// scenario's windows: an OK line, not a widening.
func TestDoctorLoggedGaugesWithLoads(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{Gauges: contract.GaugesLogged})
	r := doctor.Run(t.Context(), c, doctor.Options{InProcess: true})
	out := report(t, r)
	if r.ExitCode() != doctor.ExitOK {
		t.Fatalf("exit %d, problems %q", r.ExitCode(), r.Problems())
	}
	for _, want := range []string{"ok       gauges logged (", "idle refresh 30s; live loads: every engine serves /v1/loads?include=disagg; queues are judged by them, so the scenario's windows apply"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "widen") {
		t.Error("a logged engine with live loads gets widened windows")
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
	var b strings.Builder
	for _, n := range contract.NeededGauges("prefill") {
		if n == contract.MetricPrefillBootstrapQueue {
			n = bootstrapName
		}
		b.WriteString(gauge(n, "prefill"))
	}
	return b.String()
}

func decodeMetrics(without string) string {
	var b strings.Builder
	for _, n := range contract.NeededGauges("decode") {
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
		case contract.PathDebugRooms:
			fmt.Fprint(w, `{"role":"decode","held":[],"cleared":[]}`)
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
// for metrics off on one engine, a missing family, the old gauge name, an
// unready router and a router without /readiness. The crafted engines
// serve /debug/rooms (as the bundled engine does) so each case's own exit
// code shows; "no /debug/rooms" is real SGLang, where rooms-terminal is
// always skipped.
func TestDoctorCraftedSGLang(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readiness int
		prefill   string
		decode    string
		noRooms   bool // like real SGLang: no --engine-url serving /debug/rooms
		exit      int
		want      []string // the problem lines
		line      string   // a line that must appear, but not as a problem
	}{
		{name: "healthy", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitOK,
			// SGLang (no gauge mode in its server info) without /v1/loads.
			line: "idle refresh 30s; live loads: none: live loads " + "%P/v1/loads?include=disagg: status 404: a healthy engine can show a queue for up to 30s after traffic stops, so run and watch widen their wedge window and drain deadline to at least 32.5s"},
		{name: "no /debug/rooms", noRooms: true, readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitReduced, want: []string{"check rooms-terminal: skipped: needs /debug/rooms"}},
		{name: "metrics off on decode", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: "",
			exit: doctor.ExitReduced, want: []string{"404: metrics are off: start this engine with --enable-metrics"}, line: "info     check slots-released: reduced for the engines above"},
		{name: "missing family", readiness: 200, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(contract.MetricDecodeTransferQueue),
			exit: doctor.ExitReduced, want: []string{"no " + contract.MetricDecodeTransferQueue + " family"}, line: "info     check slots-released: reduced for the engines above"},
		{name: "old gauge name", readiness: 200, prefill: prefillMetrics("sglang:num_prefill_prealloc_queue_reqs"), decode: decodeMetrics(""),
			exit: doctor.ExitOK,
			line: "old gauge name sglang:num_prefill_prealloc_queue_reqs instead of " + contract.MetricPrefillBootstrapQueue + " (SGLang before the rename): read as its alias, checks apply"},
		{name: "router not ready", readiness: 503, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitUnusable, want: []string{"health router: /readiness status 503: {\"status\":\"not ready\""}},
		{name: "router without readiness", readiness: 0, prefill: prefillMetrics(contract.MetricPrefillBootstrapQueue), decode: decodeMetrics(""),
			exit: doctor.ExitReduced, want: []string{"health router: /health 200, but router has no /readiness"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, d := engineServer(t, "prefill", tc.prefill), engineServer(t, "decode", tc.decode)
			ext := &target.External{Router: routerServer(t, tc.readiness), Metrics: []string{p + "/metrics", d + "/metrics"}}
			if !tc.noRooms {
				ext.Engines = []string{p, d}
			}
			r := doctor.Run(t.Context(), ext, doctor.Options{})
			out := report(t, r)
			if r.ExitCode() != tc.exit {
				t.Errorf("exit %d, want %d", r.ExitCode(), tc.exit)
			}
			want := tc.want
			probs := r.Problems()
			if len(probs) != len(want) {
				t.Errorf("%d problems %q, want %d", len(probs), probs, len(want))
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			if line := strings.ReplaceAll(tc.line, "%P", p); line != "" && !strings.Contains(out, line) {
				t.Errorf("report lacks %q", tc.line)
			}
			if !strings.Contains(out, "no pdchaos engine table gauges (pdchaos:table_*, as on SGLang): not judged, not needed") {
				t.Errorf("report does not say the table gauges are absent and not judged")
			}
			if !strings.Contains(out, "version "+p+": 0.5.4") {
				t.Error("report lacks the SGLang version")
			}
		})
	}
}
