package riveroutbox

import (
	"flag"
	"testing"

	"github.com/outboxlab/handoff"
)

// TestVerifyRunning verifies River's own client as it runs, on SQLite,
// replaying the saved schedules of testdata/running first. Keys refused
// for good are drawn; keys always slow or down for good are left out,
// for time alone: River's attempts back off as the fourth power of the
// attempt, so a key that never succeeds runs some three virtual weeks
// before River discards it, and a search of such schedules took longer
// than CI affords; -lasting draws them.
func TestVerifyRunning(t *testing.T) {
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{Corpus: "testdata/running", LeaveOut: leaveOut()})
}

// TestVerifyRunningOnPostgres is TestVerifyRunning on PostgreSQL, through
// River's pgx driver.
func TestVerifyRunningOnPostgres(t *testing.T) {
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{Corpus: "testdata/running", Backend: handoff.Postgres, PostgresURL: handoff.PostgresServer(t), LeaveOut: leaveOut()})
}

// TestVerifyRunningFiveAttempts verifies River's client with
// MaxAttempts 5 on SQLite, drawing every fault that lasts per key: keys
// refused for good, always answered too late, and with the receiver down
// for good, which River gives up after its five attempts. Workers paused
// past River's rescue are left out: what River then does is the finding
// TestRescuedAttemptRunsPastMaxAttempts keeps, and would end the search
// there; the default design's searches pause them. It draws
// fiveAttemptsSchedules schedules a backend, so that the module's tests
// stay within go test's default timeout of ten minutes.
func TestVerifyRunningFiveAttempts(t *testing.T) {
	handoff.VerifyRunning(t, DesignFiveAttempts, handoff.RunningOptions{Corpus: "testdata/running", LeaveOutPauses: true, Schedules: fiveAttemptsSchedules})
}

// fiveAttemptsSchedules is how many schedules each search of
// DesignFiveAttempts draws.
const fiveAttemptsSchedules = 40

// TestVerifyRunningFiveAttemptsOnPostgres is
// TestVerifyRunningFiveAttempts on PostgreSQL.
func TestVerifyRunningFiveAttemptsOnPostgres(t *testing.T) {
	handoff.VerifyRunning(t, DesignFiveAttempts, handoff.RunningOptions{Corpus: "testdata/running", Backend: handoff.Postgres, PostgresURL: handoff.PostgresServer(t), LeaveOutPauses: true, Schedules: fiveAttemptsSchedules})
}

// lasting has the searches draw every fault that lasts per key.
var lasting = flag.Bool("lasting", false, "TestVerifyRunning, TestVerifyRunningOnPostgres: draw keys always slow or with the receiver down for good too (a key River never delivers runs some three virtual weeks before River discards it)")

// leaveOut is what the searches leave out: keys River never delivers,
// unless -lasting.
func leaveOut() []handoff.KeyFault {
	if *lasting {
		return nil
	}
	return []handoff.KeyFault{handoff.SlowKey, handoff.DownKey}
}
