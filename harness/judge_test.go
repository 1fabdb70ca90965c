package harness

import (
	"path/filepath"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
	"github.com/pdchaos/pdchaos/harness/record"
)

// TestJudgeLogEndRule: the log's end event decides what a partial or
// errored run's verdict is, as Run always did. An interrupted run proves
// nothing (failures and skips become inconclusive); a harness error has no
// verdict; the last end event wins (the fault player logs one mid-run).
func TestJudgeLogEndRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		log      string
		ends     []check.EndInfo
		want     check.Status
		roomsNow check.Status
	}{
		{"clean end", "good.jsonl", nil, check.Pass, check.Pass},
		{"failing run", "bad-rooms-terminal.jsonl", nil, check.Fail, check.Fail},
		{"interrupted pass", "good.jsonl", []check.EndInfo{{Interrupted: true}}, check.Inconclusive, check.Pass},
		{"interrupted failure", "bad-rooms-terminal.jsonl", []check.EndInfo{{Interrupted: true}}, check.Inconclusive, check.Inconclusive},
		{"harness error", "good.jsonl", []check.EndInfo{{Error: "close target: boom"}}, "", check.Pass},
		{"player error then a clean end", "good.jsonl", []check.EndInfo{{Error: "fault player: x"}, {}}, check.Pass, check.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, err := record.ReadEventsFile(filepath.Join("check", "testdata", tc.log))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.ends {
				evs = append(evs, check.Event{Type: check.EvEnd, End: &e})
			}
			checks, v := JudgeLog(evs, CheckSpec{})
			if v != tc.want {
				t.Fatalf("verdict %q, want %q", v, tc.want)
			}
			if c, _ := checks.Get(contract.CheckRoomsTerminal); c.Status != tc.roomsNow {
				t.Fatalf("rooms-terminal %s, want %s", c.Status, tc.roomsNow)
			}
		})
	}
}
