package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/harness/check"
)

// DetectOptions shape the detection benchmark; zero fields get the defaults.
type DetectOptions struct {
	// CLI is the pdchaos binary that runs each catching scenario. Required.
	CLI string
	// Dir holds the runs. Required.
	Dir string
	// Seeds is how many seeds per regression (1..Seeds); default 5.
	Seeds int
	// Regressions default to every entry of contract.Catalogue().
	Regressions []string
	// Progress, when set, receives a line per run.
	Progress func(string)
}

// detection is what one run's event log says about how fast a wedge was
// seen: offsets from the run's base time, negative where it never happened.
type detection struct {
	missed     time.Duration // the first room past its state's deadline
	firstWedge time.Duration // any wedge: room age, queue growth or gauge
	gaugeWedge time.Duration // the gauge and queue watchdog alone
	verdict    time.Duration // the judge phase began
}

// detectionOf reads one run's events. The moment a room missed its
// deadline is the earliest Since+Deadline of the room wedges the watchdog
// logged (it places Since no later than the room's last update).
func detectionOf(evs []check.Event) detection {
	d := detection{missed: -1, firstWedge: -1, gaugeWedge: -1, verdict: -1}
	earliest := func(cur, v time.Duration) time.Duration {
		if cur < 0 || v < cur {
			return v
		}
		return cur
	}
	for _, e := range evs {
		switch {
		case e.Type == check.EvWedge && e.Wedge != nil:
			w := e.Wedge
			d.firstWedge = earliest(d.firstWedge, w.At)
			if w.Kind == check.WedgeRoom {
				d.missed = earliest(d.missed, w.Since+w.Deadline)
			} else {
				d.gaugeWedge = earliest(d.gaugeWedge, w.At)
			}
		case e.Type == check.EvPhase && e.Phase == "judge" && d.verdict < 0:
			d.verdict = e.T
		}
	}
	return d
}

// Detection runs each regression's catching scenario (contract.Catalogue)
// over Seeds seeds and reports the median time from the first room missing
// its deadline to the first wedge event (room-age watchdog included), to
// the first gauge or queue wedge (that watchdog alone), and to the verdict.
func Detection(ctx context.Context, o DetectOptions) ([]Figure, error) {
	if o.CLI == "" || o.Dir == "" {
		return nil, errors.New("detection bench: CLI and Dir are required")
	}
	if o.Seeds <= 0 {
		o.Seeds = 5
	}
	if len(o.Regressions) == 0 {
		o.Regressions = contract.RegressionNames()
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	var out []Figure
	for _, name := range o.Regressions {
		reg, ok := contract.LookupRegression(name)
		if !ok {
			return out, fmt.Errorf("detection bench: unknown regression %q", name)
		}
		var toWedge, toGauge, toVerdict []time.Duration
		caught, noRoom := 0, 0
		for seed := 1; seed <= o.Seeds; seed++ {
			dir := filepath.Join(o.Dir, name, "seed-"+strconv.Itoa(seed))
			evs, rc, err := runOnce(ctx, o.CLI, dir, name, seed)
			if err != nil {
				return out, err
			}
			if rc == 1 {
				caught++
			}
			d := detectionOf(evs)
			o.Progress(fmt.Sprintf("detect %s seed %d: exit %d, missed %v, first wedge %v, gauge wedge %v, verdict %v",
				name, seed, rc, d.missed, d.firstWedge, d.gaugeWedge, d.verdict))
			if d.missed < 0 {
				noRoom++
				continue
			}
			if d.firstWedge >= 0 {
				toWedge = append(toWedge, d.firstWedge-d.missed)
			}
			if d.gaugeWedge >= 0 {
				toGauge = append(toGauge, d.gaugeWedge-d.missed)
			}
			if d.verdict >= 0 {
				toVerdict = append(toVerdict, d.verdict-d.missed)
			}
		}
		note := fmt.Sprintf("%s in %s: caught %d of %d seeds", name, reg.Caught.Scenario, caught, o.Seeds)
		if noRoom > 0 {
			note += fmt.Sprintf("; %d seeds had no room past its deadline", noRoom)
		}
		parts := []struct {
			what string
			ds   []time.Duration
		}{{"to-first-wedge", toWedge}, {"to-gauge-wedge", toGauge}, {"to-verdict", toVerdict}}
		for _, f := range parts {
			if len(f.ds) == 0 && o.Seeds > noRoom {
				note += fmt.Sprintf("; %s: never, in %d seeds with a missed deadline", f.what, o.Seeds-noRoom)
			}
		}
		for _, f := range parts {
			v, n := median(f.ds)
			if n == 0 {
				continue // said in the note: a figure needs a measurement
			}
			out = append(out, Figure{Group: "detection", Name: fmt.Sprintf("detect/%s/%s", name, f.what), Value: v, Unit: "s",
				Better: Lower, Note: fmt.Sprintf("median of %d from the first missed room deadline; %s", n, note)})
		}
	}
	return out, nil
}

func median(ds []time.Duration) (float64, int) {
	if len(ds) == 0 {
		return -1, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Seconds(), len(s)
}

// runOnce runs `pdchaos run --regression name --seed seed` into dir and
// reads its events; the exit code is the verdict (1: caught).
func runOnce(ctx context.Context, cli, dir, name string, seed int) ([]check.Event, int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	cmd := exec.CommandContext(ctx, cli, "run", "--regression", name, "--seed", strconv.Itoa(seed), "--results", dir)
	rc := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, 0, fmt.Errorf("detection bench: run %s seed %d: %w", name, seed, err)
		}
		rc = ee.ExitCode()
	}
	runs, err := filepath.Glob(filepath.Join(dir, "*", "events.jsonl"))
	if err != nil || len(runs) != 1 {
		return nil, rc, fmt.Errorf("detection bench: run %s seed %d (exit %d) left %d event logs under %s, want 1", name, seed, rc, len(runs), dir)
	}
	f, err := os.Open(runs[0])
	if err != nil {
		return nil, rc, err
	}
	defer f.Close()
	evs, err := check.ReadEvents(f)
	if err != nil {
		return nil, rc, fmt.Errorf("detection bench: %s: %w", runs[0], err)
	}
	return evs, rc, nil
}
