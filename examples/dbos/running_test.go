package dbosoutbox

import (
	"flag"
	"testing"

	"github.com/outboxlab/handoff"
)

// schedules is how many schedules TestVerifyRunning draws: 30 by
// default, whatever -rapid.checks says, so that the module's tests stay
// within a minute on two shared cores; -schedules N searches deeper.
var schedules = flag.Int("schedules", 30, "TestVerifyRunning: how many schedules to draw")

// TestVerifyRunning verifies DBOS's own runtime as it runs, on SQLite,
// replaying the saved schedules of testdata/running first.
func TestVerifyRunning(t *testing.T) {
	handoff.VerifyRunning(t, Uncounted, handoff.RunningOptions{
		Corpus:    "testdata/running",
		Schedules: *schedules,
	})
}
