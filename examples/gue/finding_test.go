package gueoutbox

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// resetLosesACount is the schedule of the finding that
// TestConnectionResetLosesACount keeps.
const resetLosesACount = "testdata/findings/connection-reset-loses-a-count.schedule"

// TestConnectionResetLosesACount keeps a finding about gue v5.8.0 as
// deployed: gue counts a job's failure (Job.Error: error_count + 1) in the
// transaction that holds the job's row lock, the one LockJob began. A
// connection reset while the handler's send is under way rolls that
// transaction back, so the lock is gone while the process and its send
// live on: another worker locks the job at once and sends the key again,
// and the first send's failure, answered by the receiver, can no longer
// be counted. A key that fails for good is then given up after one more
// failed send than its budget of 10 for each such reset, which H4 catches.
// The receiver's idempotency keeps the overlapping sends to one task (H1
// holds). It broke H4 in 10 of 10 runs when found; the test wants H4 in
// every one of 3.
func TestConnectionResetLosesACount(t *testing.T) {
	r := handoff.ReplayRunning(t, Design, resetLosesACount, handoff.RunningOptions{
		Backend:     handoff.Postgres,
		PostgresURL: handoff.PostgresServer(t),
		Replays:     3,
	})
	if r.Broke != r.Runs || r.Check != "H4" {
		t.Errorf("gue's lost count: %s broke in %d of %d runs, want H4 in every run: %s", r.Check, r.Broke, r.Runs, r.Detail)
	}
}
