package reports_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/reports"
)

// parsePage renders dir's report and parses it.
func parsePage(t *testing.T, dir string) (*html.Node, string) {
	t.Helper()
	if err := reports.RenderDir(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("report.html does not parse: %v", err)
	}
	return doc, string(b)
}

// attr returns n's attribute (namespace-blind).
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// find returns every element for which match holds, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// byID finds the element with the id.
func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	els := find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == id })
	if len(els) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(els), id)
	}
	return els[0]
}

// text is an element's text content.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// hasClass reports whether n has the class.
func hasClass(n *html.Node, c string) bool {
	v, _ := attr(n, "class")
	return strings.Contains(" "+v+" ", " "+c+" ")
}

// TestReportHTML is must-show 1's test: a failing run's page has the
// verdict, seed, target and version at the top, a line per checker with its
// evidence, a chart per PD gauge and token usage plus running, outcomes and
// latency, the fault window shaded and labelled, the wedge marked, the
// violations, the stuck rooms' histories and the outcome table.
func TestReportHTML(t *testing.T) {
	t.Parallel()
	dir := testkit.CopyDir(t, failingRun)
	doc, page := parsePage(t, dir)
	for id, want := range map[string]string{"verdict": "FAIL", "seed": "7", "target": "bundled", "version": "go1.26"} {
		if got := text(byID(t, doc, id)); !strings.Contains(got, want) {
			t.Errorf("#%s = %q, want %q", id, got, want)
		}
	}
	if got := text(byID(t, doc, "repro")); !strings.Contains(got, "--seed 7") {
		t.Errorf("repro line %q", got)
	}
	checks := find(doc, func(n *html.Node) bool { return n.Data == "tr" && hasClass(n, "check") })
	// One line per checker the run was judged with (a run recorded before a
	// checker was added has fewer than contract.CheckNames()).
	run, err := reports.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != len(run.Result.Checks) || len(checks) == 0 {
		t.Errorf("%d checker lines, want %d", len(checks), len(run.Result.Checks))
	}
	failed := map[string]bool{}
	for _, c := range checks {
		name, _ := attr(c, "data-check")
		if st, _ := attr(c, "data-status"); st == "fail" {
			failed[name] = true
		}
		if !strings.Contains(text(c), "=") {
			t.Errorf("checker %s line has no evidence: %q", name, text(c))
		}
	}
	if !failed[contract.CheckRoomsTerminal] || !failed[contract.CheckSlotsReleased] || len(failed) != 2 {
		t.Errorf("failing checkers %v, want rooms-terminal and slots-released", failed)
	}
	charts := find(doc, func(n *html.Node) bool { return n.Data == "figure" && hasClass(n, "chart") })
	if want := len(contract.SlotGauges()) + 1 + 3; len(charts) != want {
		t.Fatalf("%d charts, want %d (slot gauges, token usage, in flight, outcomes, latency)", len(charts), want)
	}
	titles := map[string]*html.Node{}
	for _, c := range charts {
		if len(find(c, func(n *html.Node) bool { return n.Data == "svg" })) != 1 {
			t.Errorf("chart %q has no inline svg", text(c))
		}
		b := find(c, func(n *html.Node) bool { return n.Data == "b" })
		if len(b) == 0 {
			t.Fatalf("chart without a caption")
		}
		titles[text(b[0])] = c
	}
	for _, g := range append(contract.SlotGauges(), contract.MetricTokenUsage) {
		if titles[g] == nil {
			t.Errorf("no chart of %s", g)
		}
	}
	// The fault window is shaded (orange, translucent) and labelled on every
	// chart; the wedge is a red dashed line everywhere and a labelled mark
	// on its gauge's chart.
	shade := regexp.MustCompile(`fill:#FFA[0-9A-F]{3};fill-opacity:0\.\d+`)
	for title, c := range titles {
		var svg strings.Builder
		if err := html.Render(&svg, c); err != nil {
			t.Fatal(err)
		}
		s := svg.String()
		if !shade.MatchString(s) || !strings.Contains(s, "fault 0: delay-messages") {
			t.Errorf("chart %s: fault window not shaded and labelled", title)
		}
		if !strings.Contains(s, "stroke:#D62728") || !strings.Contains(s, "stroke-dasharray") {
			t.Errorf("chart %s: no wedge line", title)
		}
		if title == contract.MetricPrefillInflightQueue && !strings.Contains(s, "WEDGE 1") {
			t.Errorf("chart %s: wedge not marked at its value", title)
		}
	}
	if v := find(byID(t, doc, "violations"), func(n *html.Node) bool { return hasClass(n, "violation") }); len(v) < 2 {
		t.Errorf("%d violation rows", len(v))
	}
	rooms := find(byID(t, doc, "stuck"), func(n *html.Node) bool { return hasClass(n, "room") })
	if len(rooms) == 0 {
		t.Fatal("no stuck room history")
	}
	hist := find(rooms[0], func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "history") })
	if len(hist) != 1 || !strings.Contains(text(hist[0]), "prefill") || !strings.Contains(text(hist[0]), "decode") {
		t.Fatal("stuck room history has no prefill and decode columns")
	}
	if !strings.Contains(page, `class="mono prefill"`) {
		t.Error("no prefill event in any stuck room's history")
	}
	out := text(byID(t, doc, "outcomes"))
	for _, want := range []string{"completed", "cancelled while queued", "cancelled in decode", "errors", "hung", "TTFT", "ITL", "p50", "p90", "p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("outcome table lacks %q", want)
		}
	}
	if strings.Contains(page, `id="probes"`) {
		t.Error("probe section rendered for a run without probe data")
	}
}

// TestReportLoadsNothing: the page loads nothing when viewed — no script,
// stylesheet link, image, frame or object; no src/href to http(s) or //;
// no @import or remote url() in styles.
func TestReportLoadsNothing(t *testing.T) {
	t.Parallel()
	dir := testkit.CopyDir(t, failingRun)
	doc, page := parsePage(t, dir)
	assertOffline(t, doc, page)
}

// assertOffline fails for anything in the page that would fetch.
func assertOffline(t *testing.T, doc *html.Node, page string) {
	t.Helper()
	for _, n := range find(doc, func(n *html.Node) bool { return true }) {
		switch n.Data {
		case "script", "link", "img", "iframe", "frame", "object", "embed", "audio", "video", "source", "image", "use", "foreignObject":
			t.Errorf("element <%s> in the page", n.Data)
		}
		for _, a := range n.Attr {
			key := strings.ToLower(a.Key)
			v := strings.ToLower(strings.TrimSpace(a.Val))
			switch key {
			case "src", "href", "srcset", "poster", "data", "action", "formaction", "background", "xlink:href":
				if a.Key == "href" && n.Data == "a" && strings.HasPrefix(v, "#") {
					continue
				}
				if strings.HasPrefix(v, "http:") || strings.HasPrefix(v, "https:") || strings.HasPrefix(v, "//") {
					t.Errorf("<%s %s=%q> loads from the network", n.Data, a.Key, a.Val)
				}
				if n.Data != "a" {
					t.Errorf("<%s %s=%q>: nothing in the page may load a resource", n.Data, a.Key, a.Val)
				}
			case "style":
				checkCSS(t, "style attribute", a.Val)
			}
		}
		if n.Data == "style" {
			checkCSS(t, "<style>", text(n))
		}
	}
	if strings.Contains(strings.ToLower(page), "<!doctype svg") {
		t.Error("inline svg keeps a doctype naming a remote DTD")
	}
}

// checkCSS fails for @import and for url() that is not a fragment or data.
func checkCSS(t *testing.T, where, css string) {
	t.Helper()
	low := strings.ToLower(css)
	if strings.Contains(low, "@import") {
		t.Errorf("%s has @import", where)
	}
	for _, m := range regexp.MustCompile(`url\(\s*['"]?([^'")]*)`).FindAllStringSubmatch(low, -1) {
		if !strings.HasPrefix(m[1], "#") && !strings.HasPrefix(m[1], "data:") {
			t.Errorf("%s loads url(%s)", where, m[1])
		}
	}
}

// TestReportProbes: a probes section in result.json is rendered (escaped);
// without one the page has no probe section (TestReportHTML).
func TestReportProbes(t *testing.T) {
	t.Parallel()
	dir := testkit.CopyDir(t, failingRun)
	path := filepath.Join(dir, reports.ResultFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["probes"] = map[string]any{"hit": 3, "total": 4, "sites": []any{
		map[string]any{"name": "decode.abort.<b>", "hits": 2}, map[string]any{"name": "prefill.bootstrap", "hits": 0}}}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, page := parsePage(t, dir)
	got := text(byID(t, doc, "probes"))
	for _, want := range []string{"Probe coverage", "decode.abort.<b>", "prefill.bootstrap", "total"} {
		if !strings.Contains(got, want) {
			t.Errorf("probe section lacks %q: %q", want, got)
		}
	}
	if strings.Contains(page, "decode.abort.<b>") {
		t.Error("probe names are not escaped")
	}
}

// TestReportKilledRun: a run killed before result.json still renders from
// its log, marked unfinished.
func TestReportKilledRun(t *testing.T) {
	t.Parallel()
	dir := testkit.CopyDir(t, failingRun)
	if err := os.Remove(filepath.Join(dir, reports.ResultFile)); err != nil {
		t.Fatal(err)
	}
	doc, page := parsePage(t, dir)
	if got := text(byID(t, doc, "verdict")); got != "UNFINISHED" {
		t.Errorf("verdict %q", got)
	}
	if got := text(byID(t, doc, "seed")); got != "7" {
		t.Errorf("seed %q", got)
	}
	assertOffline(t, doc, page)
}
