package watermilloutbox

import (
	"testing"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
)

// replay runs a finding's schedule three times on d, on PostgreSQL.
func replay(t *testing.T, d designs.Running, schedule string) handoff.RunningReplay {
	t.Helper()
	return handoff.ReplayRunning(t, d, schedule, handoff.RunningOptions{
		Backend:     handoff.Postgres,
		PostgresURL: handoff.PostgresServer(t),
		Replays:     3,
	})
}

// TestRetriesResetBreakTheBudget keeps a finding about Watermill v1.5.0 as
// deployed behind its Retry middleware: Retry counts a message's failures
// in memory, for one handling, and nothing else counts them. A handling
// that ends before its retries are spent (the subscriber's ack deadline
// passed while the handler was paused, a connection reset took the
// subscriber's transaction, or the process crashed) leaves the message
// unacked, and the next handling starts from nothing with the whole
// budget again: a key that keeps failing gets more failed sends than
// 1 + MaxRetries, which H4 catches. The first schedule was found and
// minimized by the search (10 of 10 runs broke H4); the other two, a
// connection reset and a crash, were written from it. Each must break H4
// in every one of 3 runs.
func TestRetriesResetBreakTheBudget(t *testing.T) {
	for _, schedule := range []string{
		"testdata/findings/pause-past-the-ack-deadline-resets-retries.schedule",
		"testdata/findings/reset-during-retries-resets-them.schedule",
		"testdata/findings/crash-resets-retries.schedule",
	} {
		t.Run(schedule, func(t *testing.T) {
			r := replay(t, Design, schedule)
			if r.Broke != r.Runs || r.Check != "H4" {
				t.Errorf("Watermill's retries reset: %s broke in %d of %d runs, want H4 in every run: %s", r.Check, r.Broke, r.Runs, r.Detail)
			}
		})
	}
}

// TestResetThenRefusalSentAgain keeps a second finding of the same
// cause, for a handler that writes its outcome in the subscriber's
// transaction (InSubscriberTx), as watermill-sql offers: that
// transaction is gone after a connection reset, but the handling goes
// on. A refusal for good that comes after the reset cannot be recorded,
// the write's error goes back to Retry, and the key is sent again after
// the receiver refused it for good, which H8 catches. It broke H8 in 10
// of 10 runs when found; the test wants H8 in every one of 3. Design's
// handler, which writes on the pool and reads the key's outcome before
// each send, holds on the same schedule.
func TestResetThenRefusalSentAgain(t *testing.T) {
	const schedule = "testdata/findings/reset-then-refusal-sent-again.schedule"
	r := replay(t, InSubscriberTx, schedule)
	if r.Broke != r.Runs || r.Check != "H8" {
		t.Errorf("Watermill's refusal lost with its transaction: %s broke in %d of %d runs, want H8 in every run: %s", r.Check, r.Broke, r.Runs, r.Detail)
	}
	held := replay(t, Uncounted, schedule)
	if held.Broke != 0 {
		t.Errorf("the handler that writes on the pool broke %s in %d of %d runs: %s", held.Check, held.Broke, held.Runs, held.Detail)
	}
}
