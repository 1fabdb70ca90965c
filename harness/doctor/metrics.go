package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/record"
)

// info is what /get_server_info (or /server_info) said.
type info struct {
	Version string `json:"version"`
	Mode    string `json:"disaggregation_mode"`
	path    string
	err     string
}

// serverInfo asks base for /get_server_info, then /server_info.
func serverInfo(ctx context.Context, c *http.Client, base string) info {
	var errs []string
	for _, p := range []string{contract.PathServerInfo, "/server_info"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p, nil)
		if err != nil {
			return info{err: err.Error()}
		}
		resp, err := c.Do(req)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		var in info
		derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&in)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Sprintf("%s: status %d", p, resp.StatusCode))
			continue
		}
		if derr != nil {
			errs = append(errs, fmt.Sprintf("%s: not JSON: %v", p, derr))
			continue
		}
		in.path = p
		return in
	}
	return info{err: strings.Join(errs, "; ")}
}

// scrapeFindings scrapes one /metrics URL and reports what it lacks; it
// returns false when slots-released cannot fully judge this engine.
func scrapeFindings(ctx context.Context, r *Report, c *http.Client, url, mode string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		r.add(Unusable, "metrics %s: %v", url, err)
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		r.add(Unusable, "metrics %s: unreachable: %v", url, err)
		return false
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		r.add(Reduced, "metrics %s: 404: metrics are off: start this engine with --enable-metrics; its gauges cannot be judged", url)
		return false
	case resp.StatusCode != http.StatusOK:
		r.add(Reduced, "metrics %s: status %d: its gauges cannot be judged", url, resp.StatusCode)
		return false
	}
	// Read as the recorder will: within its limit, and whole.
	body, err := io.ReadAll(io.LimitReader(resp.Body, record.MaxScrapeBytes+1))
	switch {
	case err != nil:
		r.add(Reduced, "metrics %s: the answer was cut after %d bytes: %v: its gauges cannot be judged", url, len(body), err)
		return false
	case len(body) > record.MaxScrapeBytes:
		r.add(Reduced, "metrics %s: the answer goes on past the recorder's limit of %d bytes: every scrape will fail, its gauges cannot be judged", url, record.MaxScrapeBytes)
		return false
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		r.add(Reduced, "metrics %s: not Prometheus text: %v", url, err)
		return false
	}
	if _, err := record.ParseMetrics(bytes.NewReader(body)); err != nil {
		r.add(Reduced, "metrics %s: the recorder refuses it: %v: slots-released is inconclusive for this engine", url, err)
		return false
	}
	var names []string
	engineType := mode
	for name, f := range fams {
		names = append(names, name)
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "engine_type" && engineType == "" {
					engineType = l.GetValue()
				}
			}
		}
	}
	slices.Sort(names)
	var sg []string
	for _, n := range names {
		if strings.HasPrefix(n, "sglang:") {
			sg = append(sg, n)
		}
	}
	r.add(Info, "metrics %s: %s engine, %d families (%d sglang:): %s", url, orUnknown(engineType), len(names), len(sg), strings.Join(sg, " "))
	r.add(Info, "metrics %s: %s", url, tableFindings(fams))
	ok := true
	for _, need := range contract.NeededGauges(engineType) {
		if _, has := fams[need]; has {
			continue
		}
		old := ""
		for o, cur := range contract.MetricAliases() {
			if _, has := fams[o]; has && cur == need {
				old = o
			}
		}
		if old != "" {
			// The recorder reads contract.MetricAliases as today's names,
			// so the checks lose nothing; say so, as context.
			r.add(Info, "metrics %s: old gauge name %s instead of %s (SGLang before the rename): read as its alias, checks apply", url, old, need)
			continue
		}
		r.add(Reduced, "metrics %s: no %s family: the check that needs it is inconclusive for this engine (SGLang sets gauges at its first stats log: send one request, or wait 30 s after start)", url, need)
		ok = false
	}
	return ok
}

// tableFindings says which of the pdchaos engine's table gauges an engine
// exports: slots-released judges those it finds and skips the rest, so an
// engine without them (SGLang) loses nothing, and doctor says so.
func tableFindings[V any](fams map[string]V) string {
	all := append(append([]string{contract.MetricTransferWorkersBusy}, contract.TableGauges()...), contract.OverdueGauges()...)
	var have []string
	for _, n := range all {
		if _, ok := fams[n]; ok {
			have = append(have, n)
		}
	}
	switch len(have) {
	case 0:
		return "no pdchaos engine table gauges (pdchaos:table_*, as on SGLang): not judged, not needed"
	case len(all):
		return fmt.Sprintf("all %d pdchaos engine table gauges: slots-released judges them (tables back to baseline, nothing overdue)", len(all))
	}
	return fmt.Sprintf("%d of %d pdchaos engine table gauges (%s): slots-released judges those, the absent ones are not judged", len(have), len(all), strings.Join(have, " "))
}
