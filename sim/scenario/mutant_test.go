//go:build pdchaos_mutant

package scenario

import (
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/sim"
)

// Built with -tags pdchaos_mutant the core never sweeps orphan transfer
// infos, a failure path no regression names. The simulator, exploring the
// late-registration preset's swarm seeds with no regression on, must find
// it: a seed whose rooms-terminal fails (4 of seeds 1-100 at 55b3d28; the
// fixed engine passes all 100). Its plain seeds 1-20, which this test
// explored before, no longer reach the sweep at all: only swarm seeds do
// (make sim-coverage), so make test runs this test now, lest it rot again.
func TestMutantFound(t *testing.T) {
	cfg := preset(t, "late-registration")
	sum, err := sim.Explore(t.Context(), cfg, 1, 100, sim.ExploreOptions{Workers: 2, StopAtFirst: true, Swarm: true, Checker: contract.CheckRoomsTerminal})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Failing) == 0 {
		t.Fatalf("mutant core: %d seeds of late-registration, none failed rooms-terminal", sum.Seeds)
	}
	c, _ := sum.Failing[0].Checks.Get(contract.CheckRoomsTerminal)
	t.Logf("mutant found at seed %d after %d seeds: %s", sum.Failing[0].Seed, sum.Seeds, c.Summary)
}
