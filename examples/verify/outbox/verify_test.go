package outbox

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// TestVerify checks the outbox against the handoff's contract: the
// scenarios of testdata/handoff (where HANDOFF_SAVE=1 saves a failure's
// minimal scenario) and the handoff's own corpus, each also crashed at
// every fault point, then random sequences of approvals, deliveries, lost
// replies, crashes and restarts.
func TestVerify(t *testing.T) {
	handoff.Verify(t, Design, handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true, Enumerate: true})
}
