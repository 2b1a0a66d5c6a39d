package outbox

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// TestVerify checks the recommended variant against the handoff's
// contract on SQLite: the handoff's own corpus, each scenario also
// crashed at every fault point, then random sequences of approvals,
// deliveries, lost replies, crashes, restarts, named workers' phases,
// passing time and a person's repairs.
func TestVerify(t *testing.T) {
	handoff.Verify(t, Design("goqite", Recommended, virtualClock(t)), handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true, Enumerate: true})
}
