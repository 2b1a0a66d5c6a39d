package dbosoutbox

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// crashResetsStepRetries is the schedule of the finding that
// TestCrashResetsTheStepBudget keeps.
const crashResetsStepRetries = "testdata/findings/crash-resets-step-retries.schedule"

// TestCrashResetsTheStepBudget keeps a finding about DBOS Transact v1.9.0
// as deployed: a step's retries (WithStepMaxRetries) are counted in
// memory, in executeStepWithRetry, and a step checkpoints only its final
// outcome. A crash during the retries loses the count; the next launch
// recovers the PENDING workflow and runs the step from its first try,
// with the whole budget again. A key the receiver is down for gets ten
// failed sends a crash, over the budget of 10 (H4); DBOS's only durable
// bound is the workflow's recovery attempts (100 by default, then the
// workflow is dead-lettered). It broke H4 in 10 of 10 runs when found;
// the test wants H4 in every one of 3.
func TestCrashResetsTheStepBudget(t *testing.T) {
	r := handoff.ReplayRunning(t, Design, crashResetsStepRetries, handoff.RunningOptions{Replays: 3})
	if r.Broke != r.Runs || r.Check != "H4" {
		t.Errorf("DBOS's step budget across a crash: %s broke in %d of %d runs, want H4 in every run: %s", r.Check, r.Broke, r.Runs, r.Detail)
	}
	// Declaring no count, the same schedule keeps every other check.
	if r := handoff.ReplayRunning(t, Uncounted, crashResetsStepRetries, handoff.RunningOptions{Replays: 1}); r.Broke != 0 {
		t.Errorf("%s broke %s on the finding's schedule: %s", Uncounted.Name, r.Check, r.Detail)
	}
}
