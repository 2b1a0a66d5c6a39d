package gueoutbox

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

// TestVerifyRunning verifies gue's own worker pool as it runs, on
// PostgreSQL (gue runs on nothing else), replaying the saved schedules
// of testdata/running first. Keys always answered too late or with the
// receiver down for them for good are left out: each such key fails
// until its budget is spent, and a connection reset during one of its
// sends then has it sent once more than its budget, the finding
// TestConnectionResetLosesACount keeps, which would end the search there.
// Keys refused for good are drawn.
func TestVerifyRunning(t *testing.T) {
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{
		Corpus:      "testdata/running",
		Backend:     handoff.Postgres,
		PostgresURL: handoff.PostgresServer(t),
		Schedules:   *schedules,
		LeaveOut:    []handoff.KeyFault{handoff.SlowKey, handoff.DownKey},
	})
}
