package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/harness/check"
)

// JUnit XML in the shape the Ant/Jenkins schema (junit-10.xsd family)
// describes and CI systems read: testsuites > testsuite > properties,
// testcase > failure | error | skipped. testdata/junit.xsd is the schema
// the tests validate against.

// JUnitSuites is the document root.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr,omitempty"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one run (or, in a soak, one scenario).
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

// JUnitProperty is one key figure.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one checker's judgement.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *JUnitProblem `xml:"skipped,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure, error or skip: message and type attributes and
// the evidence as text.
type JUnitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// seconds formats a duration as JUnit's decimal seconds.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// evidenceText is a check's evidence, details and stuck rooms as plain text.
func evidenceText(c check.CheckResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", c.Name, c.Summary)
	keys := make([]string, 0, len(c.Evidence))
	for k := range c.Evidence {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %d\n", k, c.Evidence[k])
	}
	for _, d := range c.Details {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	for i, s := range c.Stuck {
		if i == 5 {
			fmt.Fprintf(&b, "  … %d more stuck rooms\n", len(c.Stuck)-5)
			break
		}
		fmt.Fprintf(&b, "  room %d on %s: %s since %v, faults active: %v\n", s.Room, s.Role, s.State, s.Since, s.ActiveFaults)
		for _, e := range s.Events {
			fmt.Fprintf(&b, "    %s rank %d %s %s %s\n", e.Side, e.Rank, e.Kind, e.State, e.Detail)
		}
	}
	return b.String()
}

// checkCase turns one checker's result into a test case: fail → failure,
// inconclusive → error (it proves nothing, CI must not read it as a pass),
// skip → skipped.
func checkCase(class, name string, c check.CheckResult) JUnitCase {
	tc := JUnitCase{Name: name, Classname: class, Time: "0.000"}
	p := &JUnitProblem{Message: c.Summary, Type: string(c.Status), Text: evidenceText(c)}
	switch c.Status {
	case check.Fail:
		tc.Failure = p
	case check.Inconclusive:
		tc.Error = p
	case check.Skip:
		tc.Skipped = &JUnitProblem{Message: c.Summary}
	default:
		tc.SystemOut = p.Text
	}
	return tc
}

// count fills a suite's totals from its cases.
func (s *JUnitSuite) count() {
	s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
}

// runSuite is one run as a test suite: one case per checker, key figures
// as properties, a harness error as an error case.
func runSuite(res *RunResult, name string, stats *outcomeTable) JUnitSuite {
	s := JUnitSuite{Name: name, Time: seconds(res.Duration)}
	if !res.Started.IsZero() {
		s.Timestamp = res.Started.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(k string, v any) { s.Properties = append(s.Properties, JUnitProperty{k, fmt.Sprint(v)}) }
	prop("scenario", res.Scenario)
	prop("seed", res.Seed)
	prop("target", res.Target)
	prop("verdict", res.Verdict)
	if len(res.Regressions) > 0 {
		prop("regressions", strings.Join(res.Regressions, ","))
	}
	keys := make([]string, 0, len(res.Versions))
	for k := range res.Versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		prop("version_"+k, res.Versions[k])
	}
	prop("wedges", len(res.Wedges))
	prop("fault_windows", len(res.Faults))
	if stats != nil {
		prop("requests", stats.Requests)
		prop("completed", stats.Completed)
		prop("cancelled_queued", stats.CancelledQueued)
		prop("cancelled_decode", stats.CancelledDecode)
		prop("errors", stats.Errors)
		prop("hung", stats.Hung)
		for _, l := range stats.Lat[:1] {
			prop("ttft_p50", l.P50)
			prop("ttft_p90", l.P90)
			prop("ttft_p99", l.P99)
		}
	}
	if res.Repro != "" {
		prop("repro", res.Repro)
	}
	class := "pdchaos." + res.Scenario
	for _, c := range res.Checks {
		s.Cases = append(s.Cases, checkCase(class, c.Name, c))
	}
	if res.HarnessError != "" {
		s.Cases = append(s.Cases, JUnitCase{Name: "harness", Classname: class, Time: "0.000",
			Error: &JUnitProblem{Message: res.HarnessError, Type: "harness-error", Text: res.HarnessError}})
	}
	if len(s.Cases) == 0 {
		s.Cases = append(s.Cases, JUnitCase{Name: "run", Classname: class, Time: seconds(res.Duration),
			Error: &JUnitProblem{Message: "run has no judgement (killed before the end?)", Type: "unfinished"}})
	}
	s.count()
	return s
}

// WriteJUnit writes junit.xml for the run: one test suite, one test case
// per checker.
func (r *Run) WriteJUnit(w io.Writer) error {
	ot := r.outcomeTable()
	s := runSuite(r.Result, fmt.Sprintf("%s seed %d", r.Result.Scenario, r.Result.Seed), &ot)
	return writeJUnit(w, JUnitSuites{Name: "pdchaos", Suites: []JUnitSuite{s}})
}

// writeJUnit totals the suites and encodes the document.
func writeJUnit(w io.Writer, doc JUnitSuites) error {
	var total time.Duration
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		var f float64
		fmt.Sscanf(s.Time, "%g", &f)
		total += time.Duration(f * float64(time.Second))
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}
