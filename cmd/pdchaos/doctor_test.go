package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestDoctorCLI: doctor on the bundled engine exits 0; on an external
// deployment whose decode has metrics off it exits 2 with the line that
// says --enable-metrics is missing.
func TestDoctorCLI(t *testing.T) {
	code, out := execute(t, "doctor")
	if code != exitPass || !strings.Contains(out, "health router: /readiness 200") {
		t.Fatalf("bundled: exit %d:\n%s", code, out)
	}
	srv := func(metrics bool) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case contract.PathReadiness, contract.PathHealthGenerate:
			case contract.PathMetrics:
				if !metrics {
					http.NotFound(w, r)
					return
				}
				for _, g := range contract.SlotGauges() {
					fmt.Fprintf(w, "# TYPE %s gauge\n%s 0\n", g, g)
				}
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	router, prefill, decode := srv(false), srv(true), srv(false)
	code, out = execute(t, "doctor", "--target", "external", "--router", router,
		"--metrics", prefill+"/metrics", "--metrics", decode+"/metrics")
	if code != exitInconclusive || !strings.Contains(out, decode+"/metrics: 404: metrics are off: start this engine with --enable-metrics") {
		t.Fatalf("metrics off: exit %d:\n%s", code, out)
	}
	code, out = execute(t, "doctor", "--target", "external", "--router", router, "--metrics", prefill+"/metrics", "--proc", "prefill=no-such-process-b7e1")
	if code != 3 || !strings.Contains(out, "fault layer process: role prefill: process prefill (--proc prefill=no-such-process-b7e1)") {
		t.Fatalf("bad --proc: exit %d:\n%s", code, out)
	}
}
