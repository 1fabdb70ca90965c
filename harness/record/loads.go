package record

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// LoadsURL is the live loads URL of the engine whose /metrics is
// metricsURL: SGLang serves both on one HTTP server.
func LoadsURL(metricsURL string) string {
	base := strings.TrimSuffix(strings.TrimRight(metricsURL, "/"), contract.PathMetrics)
	return base + contract.PathLoads + "?" + contract.LoadsQueryDisagg
}

// FetchLoads GETs an engine's live loads with the PD section; an answer
// without it (an engine not in PD mode, or a build that ignores
// include=disagg) is an error, so missing queues never read as zeros.
func FetchLoads(ctx context.Context, c *http.Client, metricsURL string) (contract.LoadsResponse, error) {
	var l contract.LoadsResponse
	u := LoadsURL(metricsURL)
	if err := getJSON(ctx, c, u, MaxScrapeBytes, "live loads "+u, "/v1/loads answer", &l); err != nil {
		return l, err
	}
	if _, ok := l.LiveGauges(); !ok {
		return l, fmt.Errorf("live loads %s: no disaggregation section on every DP rank", u)
	}
	return l, nil
}

// overlayLoads reads the live loads of the engine at metricsURL and puts
// them in s in place of the gauges /metrics gave: sums in Gauges, and per
// DP rank ("dp_rank=N") in Ranks, so slots-released compares them rank by
// rank with a baseline read the same way. What /metrics said is kept in
// s.Logged.
func overlayLoads(ctx context.Context, c *http.Client, metricsURL string, s *check.Scrape) error {
	l, err := FetchLoads(ctx, c, metricsURL)
	if err != nil {
		return err
	}
	live, _ := l.LiveGauges()
	names := make([]string, 0, len(live))
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	s.Logged = map[string]float64{}
	if s.Ranks == nil {
		s.Ranks = map[string]map[string]float64{}
	}
	for _, n := range names {
		s.Logged[n] = s.Gauges[n]
		s.Gauges[n] = live[n]
		ranks := map[string]float64{}
		for _, r := range l.Loads {
			one, _ := contract.LoadsResponse{Loads: []contract.RankLoad{r}}.LiveGauges()
			ranks[check.RankKey(map[string]string{contract.LabelDPRank: strconv.Itoa(r.DPRank)})] += one[n]
		}
		s.Ranks[n] = ranks
	}
	return nil
}
