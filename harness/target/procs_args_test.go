package target

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// Every setting of the scenario's engine config reaches the role
// processes: engineArgs carries the whole config, and it decodes back to
// the same one. (Carried a flag per setting, chunk_pages, page_size and
// heartbeat_interval were dropped under target procs.)
func TestEngineArgsCarryTheWholeConfig(t *testing.T) {
	t.Parallel()
	cfg := testkit.FilledEngineConfig()
	if zero := testkit.ZeroFields(cfg); len(zero) > 1 || (len(zero) == 1 && zero[0] != "Profile") {
		t.Fatalf("the filled config leaves %v at zero: fill them in testkit.FilledEngineConfig", zero)
	}
	args := engineArgs(cfg)
	if len(args) != 2 || args[0] != "engine" || !strings.HasPrefix(args[1], "--"+contract.EngineConfigFlag+"=") {
		t.Fatalf("engine args %q: want engine --%s=JSON", args, contract.EngineConfigFlag)
	}
	var back contract.EngineConfig
	if err := json.Unmarshal([]byte(strings.TrimPrefix(args[1], "--"+contract.EngineConfigFlag+"=")), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("carried config\n%+v\nwant\n%+v", back, cfg)
	}
}

// The roles that record rooms are started on the run's time line: their
// command lines carry how far the wall clock has stepped since the first
// start (none here: within a moment of zero), which the engine command
// reads back as a duration.
func TestRoleCommandLinesCarryTheClockStep(t *testing.T) {
	t.Parallel()
	p := &Procs{cfg: testkit.FilledEngineConfig(), label: "pdchaos-1-2", began: time.Now()}
	for _, role := range []string{"prefill", "decode", "router"} {
		var step string
		for _, a := range p.commandLine(role) {
			if v, ok := strings.CutPrefix(a, "--"+contract.ClockStepFlag+"="); ok {
				step = v
			}
		}
		if role == "router" {
			if step != "" {
				t.Errorf("router: --%s=%s; the router records no rooms", contract.ClockStepFlag, step)
			}
			continue
		}
		d, err := time.ParseDuration(step)
		if err != nil || d.Abs() > time.Second {
			t.Errorf("%s: --%s=%q (%v): want a duration near zero", role, contract.ClockStepFlag, step, err)
		}
	}
}
