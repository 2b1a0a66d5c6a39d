package goqiterunning

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// TestVerifyRunning verifies goqite's own job runner as it runs, on
// SQLite, replaying the saved schedules of testdata/running first. A
// key the receiver is down for, or answers late, for good, is left out:
// the runner loses it without a trace (TestKeyDownForGoodIsLost keeps
// that finding), and the search judges the rest, keys refused for good
// included.
func TestVerifyRunning(t *testing.T) {
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{Corpus: "testdata/running", LeaveOut: keyFaultsLost})
}

// keyFaultsLost are the faults that last for which goqite's runner loses
// the key after MaxReceive receives (TestKeyDownForGoodIsLost): the
// search leaves them out.
var keyFaultsLost = []handoff.KeyFault{handoff.SlowKey, handoff.DownKey}

// TestVerifyRunningOnPostgres is TestVerifyRunning on PostgreSQL.
func TestVerifyRunningOnPostgres(t *testing.T) {
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{Corpus: "testdata/running", Backend: handoff.Postgres, PostgresURL: handoff.PostgresServer(t), LeaveOut: keyFaultsLost})
}

// TestKeyDownForGoodIsLost: a receiver down for one key for good, and
// goqite's runner, MaxReceive raised to 100, receives the message 100
// times and then never again, and nothing says so (H7): the limit of a
// raised MaxReceive, found by the faults that last.
func TestKeyDownForGoodIsLost(t *testing.T) {
	r := handoff.ReplayRunning(t, Design, "testdata/findings/key-down-for-good.schedule", handoff.RunningOptions{Replays: 3})
	if r.Broke != r.Runs || r.Check != "H7" {
		t.Fatalf("the key down for good broke %s in %d of %d runs, want H7 in every one", r.Check, r.Broke, r.Runs)
	}
}

// TestDefaultsLoseWork: with goqite's defaults, a receiver down for 15 s
// loses the follow-up: three receives 5 s apart, then the message is
// received no more and nothing says so (H7). The saved schedule replays
// it; goqite documents MaxReceive so, and a user decides what it must
// cover.
func TestDefaultsLoseWork(t *testing.T) {
	for _, b := range []handoff.Backend{handoff.SQLite, handoff.Postgres} {
		t.Run(string(b), func(t *testing.T) {
			opts := handoff.RunningOptions{Backend: b}
			if b == handoff.Postgres {
				opts.PostgresURL = handoff.PostgresServer(t)
			}
			r := handoff.ReplayRunning(t, Defaults, "testdata/findings/max-receive-outage.schedule", opts)
			if r.Broke != r.Runs || r.Check != "H7" {
				t.Fatalf("the outage broke %s in %d of %d runs, want H7 in every one", r.Check, r.Broke, r.Runs)
			}
			// The same outage with MaxReceive raised is ridden out.
			if r := handoff.ReplayRunning(t, Design, "testdata/findings/max-receive-outage.schedule", opts); r.Broke != 0 {
				t.Fatalf("MaxReceive %d lost the work too: %s", Design.Budget, r.Detail)
			}
		})
	}
}
