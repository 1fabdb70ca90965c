package gate

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/pdchaos/pdchaos/suites/labels"
)

func TestGate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gate Suite", Label(labels.TierGate))
}

var _ = BeforeSuite(func() {
	AddReportEntry("ginkgo_seed", GinkgoRandomSeed())
	AddReportEntry("results_dir", resultsRoot())
})

// Every spec: the leak check is registered first so it runs last, after
// the spec's own cleanups; then the spec's labels (suite labels included)
// must all be in the vocabulary, which also catches a raw Label(...) that
// bypassed labels.Vocabulary.Label at construction.
var _ = BeforeEach(func() {
	ignore := goleak.IgnoreCurrent()
	DeferCleanup(func() {
		Expect(goleak.Find(ignore)).To(Succeed(), "goroutines left after the spec's cleanups")
	})
	Expect(labels.New().Check(CurrentSpecReport().Labels()...)).To(Succeed())
})
