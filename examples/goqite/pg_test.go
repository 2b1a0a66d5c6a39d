package outbox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff"
)

// postgresURL returns the PostgreSQL server the tests run on
// (HANDOFF_POSTGRES_URL, or the local one), or skips the test in one line
// when it does not answer and the variable is unset; with the variable
// set, a server that does not answer fails the test.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := handoff.PostgresServer()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv(handoff.PostgresURLEnv) != "" {
			t.Fatalf("the PostgreSQL server at %s=%s does not answer: %v", handoff.PostgresURLEnv, os.Getenv(handoff.PostgresURLEnv), err)
		}
		t.Skipf("PostgreSQL suite not run: no server answers at %s; set %s=postgres://… to run it", handoff.LocalPostgres, handoff.PostgresURLEnv)
	}
	conn.Close(ctx)
	return u
}

// TestVerifyPostgres checks the recommended variant with goqite's table
// and the app's in PostgreSQL: the handoff's corpus of scenarios for
// PostgreSQL, then the random sequences.
func TestVerifyPostgres(t *testing.T) {
	u := postgresURL(t)
	handoff.Verify(t, Design("goqite", Recommended, virtualClock(t)), handoff.VerifyOptions{Builtin: true, Backend: handoff.Postgres, PostgresURL: u})
}
