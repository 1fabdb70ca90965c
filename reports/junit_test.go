package reports_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/reports"
)

// xsd is the JUnit schema (Ant/Jenkins junit-10 family) we validate against.
const xsd = "testdata/junit.xsd"

// validate runs xmllint --schema on path. Without xmllint the test is
// skipped loudly (PDCHAOS_REQUIRE_XMLLINT=1 makes that a failure);
// scripts/setup-test-deps.sh installs it (libxml2-utils).
func validate(t *testing.T, path string) error {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		msg := "xmllint not found: JUnit files were NOT validated against " + xsd +
			" (install libxml2-utils: scripts/setup-test-deps.sh, or make deps)"
		if os.Getenv("PDCHAOS_REQUIRE_XMLLINT") == "1" {
			t.Fatal(msg)
		}
		t.Log("SKIP: " + msg)
		t.Skip(msg)
	}
	out, err := exec.CommandContext(t.Context(), bin, "--noout", "--schema", xsd, path).CombinedOutput()
	if err != nil {
		return &lintError{string(out)}
	}
	return nil
}

// lintError is xmllint's complaint.
type lintError struct{ out string }

func (e *lintError) Error() string { return "xmllint: " + e.out }

// junitDoc mirrors what the tests read back.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestRunJUnit is must-show 2 for a run: junit.xml validates against the
// schema, there is one test case per checker, failing checkers are
// failures carrying their evidence, and key figures are properties.
func TestRunJUnit(t *testing.T) {
	t.Parallel()
	dir := testkit.CopyDir(t, failingRun)
	if err := reports.RenderDir(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, reports.JUnitFile)
	if err := validate(t, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || doc.Tests != 8 || doc.Failures != 2 {
		t.Fatalf("suites %d tests %d failures %d, want 1, 8, 2", len(doc.Suites), doc.Tests, doc.Failures)
	}
	s := doc.Suites[0]
	failed := map[string]string{}
	for _, c := range s.Cases {
		if c.Failure != nil {
			failed[c.Name] = c.Failure.Text
		}
	}
	if !strings.Contains(failed["rooms-terminal"], "rooms_held = 14") || !strings.Contains(failed["slots-released"], "WEDGE") {
		t.Errorf("failures lack their evidence: %q", failed)
	}
	props := map[string]string{}
	for _, p := range s.Props {
		props[p.Name] = p.Value
	}
	for k, want := range map[string]string{"seed": "7", "verdict": "fail", "regressions": "unknown-room-waiting", "wedges": "1"} {
		if props[k] != want {
			t.Errorf("property %s = %q, want %q", k, props[k], want)
		}
	}
	for _, k := range []string{"ttft_p99", "requests", "repro", "version_go"} {
		if props[k] == "" {
			t.Errorf("no property %s", k)
		}
	}
}

// TestSchemaRejects: the schema bites — a test case without a name and a
// failure outside a test case do not validate.
func TestSchemaRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"testcase without name": `<testsuites><testsuite name="s" tests="1"><testcase classname="c"/></testsuite></testsuites>`,
		"failure in a suite":    `<testsuites><testsuite name="s" tests="1"><failure message="x"/></testsuite></testsuites>`,
		"negative count":        `<testsuites><testsuite name="s" tests="-1"/></testsuites>`,
	} {
		path := filepath.Join(t.TempDir(), "bad.xml")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if validate(t, path) == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

// testSoak is a soak of three runs: a pass (directory removed), a fail
// (the recorded run) and a harness error.
func testSoak(t *testing.T, soakDir, runDir string) *reports.Soak {
	t.Helper()
	r, err := reports.Load(runDir)
	if err != nil {
		t.Fatal(err)
	}
	pass := check.Checks{{Name: "rooms-terminal", Status: check.Pass, Summary: "all rooms terminal", Evidence: map[string]int64{"rooms_checked": 9}},
		{Name: "liveness", Status: check.Pass, Summary: "3 probes", Evidence: map[string]int64{"probes": 3}}}
	return &reports.Soak{Verdict: check.Fail, Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Duration: 3 * time.Minute,
		Runs: []reports.SoakRun{
			{Scenario: "abort-storm", Seed: 1, Verdict: check.Pass, Start: 0, Duration: 40 * time.Second, Checks: pass},
			{Scenario: "late-registration", Seed: 7, Verdict: check.Fail, First: r.Result.FirstFailure, Dir: runDir,
				Start: 41 * time.Second, Duration: r.Result.Duration, Checks: r.Result.Checks},
			{Scenario: "abort-storm", Seed: 2, Verdict: "error", Error: "open bundled target: boom", Start: 70 * time.Second, Duration: time.Second},
		}}
}

// TestSoakIndex: index.html lists every run, failing first, with verdict,
// seed, failing checker and a working relative link; it has a timeline and
// loads nothing. The soak's junit.xml validates, one suite per scenario.
func TestSoakIndex(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runDir := testkit.CopyDir(t, failingRun)
	soakDir := filepath.Join(root, "soak")
	if err := os.MkdirAll(soakDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := testSoak(t, soakDir, runDir)
	if err := reports.RenderDir(runDir); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteSoak(soakDir, s); err != nil {
		t.Fatal(err)
	}
	doc, page := parsePageFile(t, filepath.Join(soakDir, reports.IndexFile))
	rows := find(doc, func(n *html.Node) bool { return n.Data == "tr" && hasClass(n, "run") })
	if len(rows) != 3 {
		t.Fatalf("%d runs listed", len(rows))
	}
	var order []string
	for _, r := range rows {
		v, _ := attr(r, "data-verdict")
		order = append(order, v)
	}
	if strings.Join(order, ",") != "fail,error,pass" {
		t.Errorf("order %v, want failing first", order)
	}
	first := text(rows[0])
	for _, want := range []string{"late-registration", "7", "rooms-terminal"} {
		if !strings.Contains(first, want) {
			t.Errorf("failing row lacks %q: %q", want, first)
		}
	}
	links := find(rows[0], func(n *html.Node) bool { return n.Data == "a" })
	if len(links) != 1 {
		t.Fatal("failing run has no link")
	}
	href, _ := attr(links[0], "href")
	if _, err := os.Stat(filepath.Join(soakDir, filepath.FromSlash(href))); err != nil {
		t.Errorf("link %q does not reach the report: %v", href, err)
	}
	if len(find(byID(t, doc, "timeline"), func(n *html.Node) bool { return n.Data == "svg" })) != 1 {
		t.Error("no soak timeline")
	}
	assertOffline(t, doc, page)

	path := filepath.Join(soakDir, reports.JUnitFile)
	if err := validate(t, path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var jd junitDoc
	if err := xml.Unmarshal(b, &jd); err != nil {
		t.Fatal(err)
	}
	if len(jd.Suites) != 2 || jd.Failures != 2 {
		t.Errorf("soak junit: %d suites, %d failures; want 2 scenarios, 2 failures", len(jd.Suites), jd.Failures)
	}
}

// parsePageFile parses an HTML file.
func parsePageFile(t *testing.T, path string) (*html.Node, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc, string(b)
}
