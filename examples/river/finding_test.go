package riveroutbox

import (
	"fmt"
	"testing"

	"github.com/outboxlab/handoff"
)

// rescuedAttempt is the schedule of the finding that
// TestRescuedAttemptRunsPastMaxAttempts keeps.
const rescuedAttempt = "testdata/findings/rescued-attempt-runs-past-max-attempts.schedule"

// TestRescuedAttemptRunsPastMaxAttempts keeps a finding about River
// v0.51.2: a worker paused past RescueStuckJobsAfter, whose job River's
// rescuer made retryable and another attempt then took, reports its
// failure when it resumes, and River's completer writes that report
// onto the new attempt, since it guards its update by the job's state
// (running) alone, not by the attempt. The job is retryable again, the
// new attempt's own report is then dropped, and River runs one attempt
// more than MaxAttempts: six requests for a key with MaxAttempts 5,
// which H4 catches. Whether the paused worker's report lands while the
// new attempt runs depends on the goroutines' order (it broke H4 in 7 of
// 20 runs on SQLite, 5 of 20 on PostgreSQL), so the schedule runs until
// it breaks, at most forty times a backend (all forty miss it about once
// in 100,000 at the lower rate), and must break H4. Each run is a subtest
// of its own, whose database is dropped as it ends.
func TestRescuedAttemptRunsPastMaxAttempts(t *testing.T) {
	for _, b := range []struct {
		name string
		opts handoff.RunningOptions
	}{
		{"sqlite", handoff.RunningOptions{}},
		{"postgres", handoff.RunningOptions{Backend: handoff.Postgres}},
	} {
		t.Run(b.name, func(t *testing.T) {
			opts := b.opts
			opts.Replays = 1
			if opts.Backend == handoff.Postgres {
				opts.PostgresURL = handoff.PostgresServer(t)
			}
			var r handoff.RunningReplay
			for run := 1; run <= 40 && r.Broke == 0; run++ {
				t.Run(fmt.Sprint("run-", run), func(t *testing.T) {
					r = handoff.ReplayRunning(t, DesignFiveAttempts, rescuedAttempt, opts)
				})
			}
			if r.Broke == 0 || r.Check != "H4" {
				t.Errorf("River's rescued attempt: %s broke in the last of its runs, want H4 in one of 40: %s", r.Check, r.Detail)
			}
		})
	}
}
