package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/hostile"
)

// The hostile-target matrix: every command that reads a deployment,
// pointed at each hostile behaviour, as a real process of the built CLI.
// PDCHAOS_HOSTILE=full runs every cell (make hostile); otherwise a quick
// subset runs with make test. PDCHAOS_HOSTILE_TABLE=FILE also writes the
// table there as Markdown.

// hostileScenario is the short run the matrix starts: two agents for 3 s,
// a 2 s drain and one probe, so a well-behaved target passes in seconds.
const hostileScenario = `name: hostile
duration: 3s
agents:
  preset: opencode-30
  scale: 0.1
  options:
    agents: 2
    start_spread: 10ms
    warm_up: 10ms
    max_tokens: 4
    think_time: 100ms
    hang_timeout: 5s
checks:
  drain_deadline: 2s
  probes: 1
  probe_deadline: 3s
`

// hostileCell is one command against one behaviour.
type hostileCell struct {
	behaviour hostile.Behaviour
	name      string // the behaviour, "+health-ok" when health is spared
	command   string
	code      int
	reason    string
	wall      time.Duration
	rssKiB    int64
	bound     time.Duration
}

// hostileCommands are the commands of the matrix, each with its args
// against server s and the deadline it states: run and soak the soak's
// per-run bound (scenario + drain + probe deadline + 90 s), watch its --for
// plus its 5 s probe and 5 s scrape timeout, doctor its --timeout plus 5 s.
func hostileCommands(dir, sc string, s *hostile.Server) map[string]struct {
	args  []string
	bound time.Duration
} {
	runBound := 3*time.Second + 2*time.Second + 3*time.Second + 90*time.Second
	results := filepath.Join(dir, "runs")
	// Where only /metrics misbehaves (and in the healthy control), the
	// target goes without /debug/rooms, as SGLang does: the fake has no
	// rooms to show, and an inconclusive rooms-terminal would hide whether
	// slots-released passed falsely.
	targetArgs := s.TargetArgs()
	if s.Behaviour() == hostile.Healthy || s.Behaviour().MetricsOnly() {
		targetArgs = s.URLOnlyArgs()
	}
	return map[string]struct {
		args  []string
		bound time.Duration
	}{
		"run":    {append([]string{"run", sc, "--results", results}, targetArgs...), runBound},
		"watch":  {[]string{"watch", "--metrics", s.URL() + "/metrics", "--for", "3s", "--window", "5s"}, 13 * time.Second},
		"doctor": {append([]string{"doctor", "--timeout", "40s"}, targetArgs...), 45 * time.Second},
		"soak":   {append([]string{"soak", "--duration", "2s", sc, "--results", results}, targetArgs...), 2*time.Second + runBound},
	}
}

// quickCells run with make test: one fast cell per command, each guarding
// a fix (a negative gauge passing slots-released, doctor holding a GiB of
// metric families, watch passing a flapping /metrics, soak spinning on a
// target it cannot open).
var quickCells = map[string][]hostile.Behaviour{
	"run":    {hostile.NegativeGauges},
	"doctor": {hostile.Huge},
	"watch":  {hostile.Flap},
	"soak":   {hostile.Reset},
}

func TestHostileTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the CLI and runs it against hostile targets")
	}
	full := os.Getenv("PDCHAOS_HOSTILE") == "full"
	dir := t.TempDir()
	bin, err := testkit.BuildCLI(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(dir, "hostile.yaml")
	if err := os.WriteFile(sc, []byte(hostileScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each behaviour that misbehaves everywhere comes twice: as it is, and
	// behind health endpoints that answer well, so run and soak get past
	// opening the target and meet the rest.
	var rows []hostile.Options
	for _, b := range hostile.Behaviours() {
		rows = append(rows, hostile.Options{Behaviour: b})
		if b != hostile.Healthy && !b.MetricsOnly() {
			rows = append(rows, hostile.Options{Behaviour: b, HealthOK: true})
		}
	}
	var cells []hostileCell
	for _, o := range rows {
		for _, cmd := range []string{"run", "watch", "doctor", "soak"} {
			if !full && (o.HealthOK || !slices.Contains(quickCells[cmd], o.Behaviour)) {
				continue
			}
			if o.HealthOK && cmd == "watch" {
				continue // watch reads /metrics only: the same cell as without
			}
			name := string(o.Behaviour)
			if o.HealthOK {
				name += "+health-ok"
			}
			t.Run(name+"/"+cmd, func(t *testing.T) {
				c := runHostileCell(t, bin, dir, sc, o, cmd)
				cells = append(cells, c)
				checkHostileCell(t, c)
			})
		}
	}
	table := hostileTable(cells)
	t.Log("\n" + table)
	if p := os.Getenv("PDCHAOS_HOSTILE_TABLE"); p != "" {
		if err := os.WriteFile(p, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runHostileCell starts a server of behaviour b, runs cmd against it in its
// own process group, and checks that nothing of it is left afterwards.
func runHostileCell(t *testing.T, bin, dir, sc string, o hostile.Options, cmd string) hostileCell {
	b := o.Behaviour
	srv, err := hostile.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	spec := hostileCommands(t.TempDir(), sc, srv)[cmd]
	ctx, cancel := context.WithTimeout(t.Context(), spec.bound+30*time.Second)
	defer cancel()
	var out bytes.Buffer
	c := exec.CommandContext(ctx, bin, spec.args...)
	c.Dir = dir
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	err = c.Run()
	cell := hostileCell{behaviour: b, name: srv.Name(), command: cmd, wall: time.Since(start), bound: spec.bound}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		cell.code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v\n%s", cmd, err, out.String())
	}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cell.rssKiB = ru.Maxrss // KiB on Linux
	}
	cell.reason = hostileReason(out.String())
	t.Logf("%s %s: exit %d in %v, %d MiB: %s\n%s", cell.name, cmd, cell.code, cell.wall.Round(time.Millisecond), cell.rssKiB>>10, cell.reason, tail(out.String(), 3000))
	// Nothing left running: no process of the command's group, no
	// connection of it open on the target.
	pgid := c.Process.Pid
	if _, err := testkit.Poll(t.Context(), 5*time.Second, func() error {
		if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("process group %d still has processes (kill 0: %v)", pgid, err)
		}
		if n := srv.OpenConns(); n != 0 {
			return fmt.Errorf("%d connections to the target still open", n)
		}
		return nil
	}); err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		t.Errorf("%s %s left something running: %v", cell.name, cmd, err)
	}
	return cell
}

// checkHostileCell: a verdict other than pass (the healthy control row
// excepted), one clear line saying why, within the command's deadline,
// in bounded memory.
func checkHostileCell(t *testing.T, c hostileCell) {
	t.Helper()
	if c.behaviour == hostile.Healthy {
		return
	}
	if c.code == exitPass {
		t.Errorf("%s %s: exit 0 against a hostile target (a false pass): %s", c.name, c.command, c.reason)
	}
	// A target that does not answer requests in time (silent, trickle,
	// endless, huge), cuts them (reset) or refuses every other one (flap)
	// really fails liveness or client-outcomes: exit 1 is the true verdict
	// there, when the check that failed says so. Where only /metrics
	// misbehaves, requests are answered well: 2 or 3 only.
	violation := !c.behaviour.MetricsOnly() && c.code == exitViolation &&
		(strings.Contains(c.reason, "FAIL liveness") || strings.Contains(c.reason, "FAIL client-outcomes"))
	if c.code != exitInconclusive && c.code != exitHarness && !violation {
		t.Errorf("%s %s: exit %d, want 2 (inconclusive) or 3 (harness error): %s", c.name, c.command, c.code, c.reason)
	}
	if c.reason == "" {
		t.Errorf("%s %s: exit %d with no line saying why", c.name, c.command, c.code)
	}
	if c.wall > c.bound {
		t.Errorf("%s %s: %v, past its stated deadline %v", c.name, c.command, c.wall, c.bound)
	}
	if c.rssKiB > 512<<10 {
		t.Errorf("%s %s: peak RSS %d MiB, over 512 MiB: a read is unbounded", c.name, c.command, c.rssKiB>>10)
	}
}

// hostileReason is the one line that says why: doctor's closing line; the
// CLI's "pdchaos: ..." error line; else, for a run or soak, the verdict with the first check
// that failed (or was inconclusive); else the last line.
func hostileReason(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines { // doctor's closing line names its gravest problem
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "doctor: ") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "pdchaos: ") {
			return strings.TrimPrefix(l, "pdchaos: ")
		}
	}
	var verdict, first string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "verdict:") || strings.HasPrefix(l, "soak verdict:"):
			verdict = l
		case len(f) > 2 && (f[1] == "FAIL" || (f[1] == "INCONCLUSIVE" && first == "")) && !strings.HasPrefix(first, "FAIL"):
			first = f[1] + " " + f[0] + ": " + strings.Join(f[2:], " ")
		}
	}
	if verdict != "" {
		if first != "" {
			return verdict + "; " + first
		}
		return verdict
	}
	if len(lines) > 0 {
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return ""
}

// hostileTable renders the cells as a Markdown table.
func hostileTable(cells []hostileCell) string {
	var b strings.Builder
	b.WriteString("| behaviour | command | exit | wall | deadline | peak RSS | reason |\n|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		r := c.reason
		if len(r) > 160 {
			r = r[:157] + "..."
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1fs | %v | %d MiB | %s |\n", c.name, c.command, c.code, c.wall.Seconds(),
			c.bound, c.rssKiB>>10, strings.ReplaceAll(r, "|", `\|`))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// TestWatchDoctorHostileInProcess: watch and doctor in this process
// against hostile targets reach the verdict named, with the reason, and
// leave no goroutine behind. Before the fixes watch exited 0 ("no wedge")
// on NaN and negative gauges and on a /metrics that failed every other
// scrape, and flagged a "wedge" on +Inf and duplicate series.
func TestWatchDoctorHostileInProcess(t *testing.T) {
	testkit.NoLeaks(t)
	for _, tc := range []struct {
		b    hostile.Behaviour
		cmd  string
		code int
		want string
	}{
		{hostile.NaNMetrics, "watch", exitHarness, `{model_name="hostile",tp_rank="0"} is NaN: a judged metric must be a finite count`},
		{hostile.InfMetrics, "watch", exitHarness, "is +Inf"},
		{hostile.NegativeGauges, "watch", exitHarness, "cannot be below zero"},
		{hostile.DuplicateSeries, "watch", exitHarness, "appears twice (values 0 and 3)"},
		{hostile.Flap, "watch", exitInconclusive, "watch: inconclusive: no wedge seen, but"},
		{hostile.Healthy, "watch", exitPass, "no wedge"},
		{hostile.NegativeGauges, "doctor", exitInconclusive, "cannot be below zero"},
		{hostile.Reset, "doctor", exitHarness, "the body was cut"},
		{hostile.GarbageMetrics, "doctor", exitInconclusive, "not Prometheus text"},
		{hostile.Reset, "soak", exitHarness, "soak stopped: 3 runs in a row ended in a harness error; the last: open external target"},
	} {
		t.Run(string(tc.b)+"/"+tc.cmd, func(t *testing.T) {
			s, err := hostile.Start(hostile.Options{Behaviour: tc.b})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			args := []string{"watch", "--metrics", s.URL() + "/metrics", "--for", "2s", "--window", "5s", "--interval", "100ms"}
			switch tc.cmd {
			case "doctor":
				args = append([]string{"doctor", "--timeout", "20s"}, s.TargetArgs()...)
			case "soak":
				sc := filepath.Join(t.TempDir(), "hostile.yaml")
				if err := os.WriteFile(sc, []byte(hostileScenario), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"soak", "--duration", "30s", sc, "--results", t.TempDir()}, s.TargetArgs()...)
			}
			code, out := execute(t, args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}
