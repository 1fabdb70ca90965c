package target

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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
