package watermilloutbox

import (
	"flag"
	"testing"

	"github.com/outboxlab/handoff"
)

// schedules is how many schedules TestVerifyRunning draws: 30 by
// default, whatever -rapid.checks says, so that the module's tests stay
// well within two minutes on two shared cores; -schedules N searches
// deeper.
var schedules = flag.Int("schedules", 30, "TestVerifyRunning: how many schedules to draw")

// TestVerifyRunning verifies Watermill's SQL subscriber under its Router,
// Retry and PoisonQueue as they run, on PostgreSQL, replaying the saved
// schedules of testdata/running first, with every fault drawn. It runs
// Uncounted, which declares no count: with Design's, every search ends on
// the finding TestRetriesResetBreakTheBudget keeps (a crash, a connection
// reset or a pause past the ack deadline during a key's retries gives the
// key its whole budget again), and nothing else would be judged.
func TestVerifyRunning(t *testing.T) {
	handoff.VerifyRunning(t, Uncounted, handoff.RunningOptions{
		Corpus:      "testdata/running",
		Backend:     handoff.Postgres,
		PostgresURL: handoff.PostgresServer(t),
		Schedules:   *schedules,
	})
}
