package gueoutbox

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
		PostgresURL: postgresURL(t),
		Schedules:   *schedules,
		LeaveOut:    []handoff.KeyFault{handoff.SlowKey, handoff.DownKey},
	})
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
