package riveroutbox

import (
	"cmp"
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	handoff.VerifyRunning(t, Design, handoff.RunningOptions{Corpus: "testdata/running", Backend: handoff.Postgres, PostgresURL: postgresURL(t), LeaveOut: leaveOut()})
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
	handoff.VerifyRunning(t, DesignFiveAttempts, handoff.RunningOptions{Corpus: "testdata/running", Backend: handoff.Postgres, PostgresURL: postgresURL(t), LeaveOutPauses: true, Schedules: fiveAttemptsSchedules})
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

// postgresURL is the server the PostgreSQL tests use: HANDOFF_POSTGRES_URL,
// or the local one. A server that does not answer skips the test, unless
// the variable names it; the variable set to off skips it too.
func postgresURL(t *testing.T) string {
	t.Helper()
	if os.Getenv("HANDOFF_POSTGRES_URL") == "off" {
		t.Skip("the PostgreSQL tests did not run: HANDOFF_POSTGRES_URL=off")
	}
	url := cmp.Or(os.Getenv("HANDOFF_POSTGRES_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("HANDOFF_POSTGRES_URL") != "" {
			t.Fatalf("HANDOFF_POSTGRES_URL names a server that does not answer: %v", err)
		}
		t.Skipf("the PostgreSQL tests did not run: no server answers at %s (set HANDOFF_POSTGRES_URL=postgres://…)", url)
	}
	conn.Close(ctx)
	return url
}
