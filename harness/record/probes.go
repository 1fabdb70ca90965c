package record

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// FinalProbes logs the code probe hits of every role at bases (engine and
// router base URLs), one EvCodeProbes event each, at the end of a run. A
// role that does not answer /debug/probes (an external deployment) is
// logged with the error; that is no failure of the run.
func (r *Recorder) FinalProbes(ctx context.Context, bases []string) {
	c := r.httpClient()
	for _, b := range bases {
		cp := fetchProbes(ctx, c, b)
		r.Log.Add(check.Event{Type: check.EvCodeProbes, Source: b, CodeProbes: &cp})
	}
}

// fetchProbes reads one role's /debug/probes.
func fetchProbes(ctx context.Context, c *http.Client, base string) check.CodeProbes {
	fail := func(err error) check.CodeProbes {
		return check.CodeProbes{Err: fmt.Sprintf("probes %s: %v", base, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+contract.PathDebugProbes, nil)
	if err != nil {
		return fail(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("status %d", resp.StatusCode))
	}
	var pr contract.ProbesResponse
	if err := json.NewDecoder(capped(resp.Body, MaxScrapeBytes, "/debug/probes answer")).Decode(&pr); err != nil {
		return fail(fmt.Errorf("decode: %w", err))
	}
	cp := check.CodeProbes{Role: pr.Role, Hits: make(map[string]int64, len(pr.Probes)), Recorded: pr.Recorded}
	for _, p := range pr.Probes {
		cp.Hits[p.Name] += p.Hits
	}
	return cp
}
