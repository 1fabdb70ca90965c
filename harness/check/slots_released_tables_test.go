package check

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// tablesScrape is a prefill scrape with every gauge slots-released needs
// at 0 plus, unless tables is nil, the engine's table gauges of rank 0 and
// 1 (rank 1's values as given, rank 0 at 0).
func tablesScrape(tables map[string]float64) *Scrape {
	s := &Scrape{EngineType: "prefill", Gauges: map[string]float64{}, Ranks: map[string]map[string]float64{}}
	put := func(g string, v float64) {
		s.Gauges[g] += v
		if s.Ranks[g] == nil {
			s.Ranks[g] = map[string]float64{}
		}
		s.Ranks[g]["tp_rank=1"] = v
		if _, ok := s.Ranks[g]["tp_rank=0"]; !ok {
			s.Ranks[g]["tp_rank=0"] = 0
		}
	}
	for _, g := range contract.NeededGauges("prefill") {
		put(g, 0)
	}
	if tables == nil {
		return s
	}
	for _, g := range append(append(append(contract.TableGauges(), contract.OverdueGauges()...), contract.TimeBoundedGauges()...), contract.MetricTransferWorkersBusy) {
		put(g, tables[g])
	}
	return s
}

// Each table judgement fails on its own leak, naming the gauge, rank and
// value; a time-bounded table left over after the drain, and a log
// without any table family (real SGLang), pass.
func TestSlotsReleasedJudgesEngineTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		mid, last map[string]float64 // nil: no table families at all
		want      Status
		names     string
	}{
		{"no table families (SGLang)", nil, nil, Pass, ""},
		{"every table back to 0", map[string]float64{contract.MetricTableStatus: 5, contract.MetricTablePendingAck: 2, contract.MetricTransferWorkersBusy: 3},
			map[string]float64{}, Pass, ""},
		{"tombstones and records left, not overdue (time-bounded)", map[string]float64{},
			map[string]float64{contract.MetricTableTombstones: 4, contract.MetricTableRecords: 4}, Pass, ""},
		{"worker still holding a chunk", map[string]float64{}, map[string]float64{contract.MetricTransferWorkersBusy: 1}, Fail,
			contract.MetricTransferWorkersBusy + "{tp_rank=1}=1"},
		{"pending ACK left behind", map[string]float64{}, map[string]float64{contract.MetricTablePendingAck: 2}, Fail,
			contract.MetricTablePendingAck + "{tp_rank=1}=2"},
		{"pending failure notice left behind", map[string]float64{}, map[string]float64{contract.MetricTablePendingFail: 1}, Fail,
			contract.MetricTablePendingFail + "{tp_rank=1}=1"},
		{"status entries left", map[string]float64{}, map[string]float64{contract.MetricTableStatus: 3}, Fail,
			contract.MetricTableStatus + "{tp_rank=1}=3"},
		{"transfer infos left", map[string]float64{}, map[string]float64{contract.MetricTableInfos: 1}, Fail,
			contract.MetricTableInfos + "{tp_rank=1}=1"},
		{"orphan history records", map[string]float64{}, map[string]float64{contract.MetricTableOrphanRecords: 2}, Fail,
			contract.MetricTableOrphanRecords + "{tp_rank=1}=2"},
		{"tombstones overdue mid-run, gone at the end", map[string]float64{contract.MetricTombstonesOverdue: 2}, map[string]float64{}, Fail,
			contract.MetricTombstonesOverdue + "{tp_rank=1}=2"},
		{"orphan infos overdue at the end", map[string]float64{}, map[string]float64{contract.MetricInfosOverdue: 1}, Fail,
			contract.MetricInfosOverdue + "{tp_rank=1}=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := map[string]float64{}
			if tc.mid == nil {
				base = nil
			}
			v := NewView([]Event{
				{T: 1, Type: EvScrape, Source: "p", Scrape: tablesScrape(base)},
				{T: 2, Type: EvScrape, Source: "p", Scrape: tablesScrape(tc.mid)},
				{T: 3, Type: EvScrape, Source: "p", Scrape: tablesScrape(tc.last)},
			})
			r := checkSlotsReleased(v)
			if r.Status != tc.want {
				t.Fatalf("%s: %s (evidence %v), want %s", r.Status, r.Summary, r.Evidence, tc.want)
			}
			if tc.want == Fail && !strings.Contains(r.Summary, tc.names) {
				t.Errorf("failure %q does not name %q", r.Summary, tc.names)
			}
			if tc.mid == nil && (r.Evidence["tables_checked"] != 0 || r.Evidence["overdue_samples_checked"] != 0) {
				t.Errorf("tables judged on a log without them: %v", r.Evidence)
			}
			if tc.mid != nil && r.Evidence["tables_checked"] != int64(len(contract.TableGauges())) {
				t.Errorf("tables_checked %d, want %d", r.Evidence["tables_checked"], len(contract.TableGauges()))
			}
		})
	}
}
