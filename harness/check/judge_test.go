package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/agents/outcome"
	"github.com/pdchaos/pdchaos/contract"
)

// TestCheckersOnRecordedLogs judges recorded logs offline: good.jsonl passes
// every checker; each bad-<check>.jsonl must make exactly that checker
// fail (faults-verified and load-floor: inconclusive, as DESIGN.md wants
// for an unverified fault or too little load) and leave the others passing.
func TestCheckersOnRecordedLogs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		check string
		want  Status
	}{
		{"good.jsonl", "", Pass},
		{"bad-rooms-terminal.jsonl", contract.CheckRoomsTerminal, Fail},
		{"bad-slots-released.jsonl", contract.CheckSlotsReleased, Fail},
		{"bad-liveness.jsonl", contract.CheckLiveness, Fail},
		{"bad-client-outcomes.jsonl", contract.CheckClientOutcomes, Fail},
		{"bad-integrity.jsonl", contract.CheckIntegrity, Fail},
		{"bad-no-leaks.jsonl", contract.CheckNoLeaks, Fail},
		{"bad-faults-verified.jsonl", contract.CheckFaultsVerified, Inconclusive},
		{"bad-load-floor.jsonl", contract.CheckLoadFloor, Inconclusive},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			evs := readLog(t, tc.file)
			checks := Judge(evs, Floor{})
			if checks.Verdict() != tc.want {
				t.Fatalf("verdict %s, want %s: %+v", checks.Verdict(), tc.want, checks)
			}
			for _, c := range checks {
				want := Pass
				if c.Name == tc.check {
					want = tc.want
				}
				if c.Status != want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Summary, want)
				}
				if c.Status == Pass && len(c.Evidence) == 0 {
					t.Errorf("%s passed with no evidence", c.Name)
				}
			}
			if tc.want == Fail && checks.Error() == "" {
				t.Fatal("Checks.Error is empty on a failing log")
			}
			if tc.want == Fail && checks.Failed()[0] != tc.check {
				t.Fatalf("first failure %v, want %s", checks.Failed(), tc.check)
			}
		})
	}
}

// TestRoomsTerminalNamesStuckRoom checks a failure carries the room, its
// history and the faults active when it stopped moving.
func TestRoomsTerminalNamesStuckRoom(t *testing.T) {
	t.Parallel()
	evs := readLog(t, "bad-rooms-terminal.jsonl")
	c, _ := Judge(evs, Floor{}).Get(contract.CheckRoomsTerminal)
	if len(c.Stuck) != 1 || c.Stuck[0].Room != 42 || len(c.Stuck[0].Events) != 3 {
		t.Fatalf("stuck rooms: %+v", c.Stuck)
	}
	if c.Stuck[0].Since.Seconds() != 3 {
		t.Fatalf("stuck since %v, want 3s (updated - base wall)", c.Stuck[0].Since)
	}
}

// TestSkipDoesNotMakeInconclusive: a target without /debug/rooms and
// in-process goroutines can still pass.
func TestSkipDoesNotMakeInconclusive(t *testing.T) {
	t.Parallel()
	evs := readLog(t, "good.jsonl")
	var ext []Event
	for _, e := range evs {
		if e.Rooms != nil {
			continue
		}
		if e.Leaks != nil {
			e.Leaks = &Leaks{Detail: "skipped"}
		}
		ext = append(ext, e)
	}
	checks := Judge(ext, Floor{})
	if checks.Verdict() != Pass {
		t.Fatalf("verdict %s: %+v", checks.Verdict(), checks)
	}
	for _, n := range []string{contract.CheckRoomsTerminal, contract.CheckNoLeaks} {
		if c, _ := checks.Get(n); c.Status != Skip {
			t.Errorf("%s: %s, want skip", n, c.Status)
		}
	}
}

// TestIntegrityCountsEngineWitness: a late KV write the engine saw land in
// another request's pages fails integrity even when every answer that was
// read matched (its victim may have been cancelled unread).
func TestIntegrityCountsEngineWitness(t *testing.T) {
	t.Parallel()
	ok := outcome.Outcome{Kind: outcome.KindCompleted}
	for _, tc := range []struct {
		name      string
		foreign   float64
		unchecked bool
		want      Status
	}{{"clean", 0, false, Pass}, {"witnessed", 3, false, Fail}, {"external model", 0, true, Skip}, {"external witnessed", 2, true, Fail}} {
		evs := []Event{
			{Type: "run", Run: &RunInfo{Scenario: "x", AnswersUnchecked: tc.unchecked}},
			{Type: "outcome", Outcome: &ok},
			{Type: "scrape", Source: "decode", Scrape: &Scrape{Counters: map[string]float64{contract.MetricForeignWrites: tc.foreign}}},
		}
		c, _ := Judge(evs, Floor{}).Get(contract.CheckIntegrity)
		if c.Status != tc.want {
			t.Errorf("%s: integrity %s (%s), want %s", tc.name, c.Status, c.Summary, tc.want)
		}
	}
}

// readLog reads a recorded log from testdata/ (the package itself does no IO).
func readLog(t *testing.T, name string) []Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := ReadEvents(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs
}

// TestReadEventsNamesTheLine: a malformed line is an error with its number.
func TestReadEventsNamesTheLine(t *testing.T) {
	t.Parallel()
	_, err := ReadEvents(strings.NewReader("{\"t\":1,\"type\":\"run\"}\n\n{not json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error %v, want one naming line 3", err)
	}
}
