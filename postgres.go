package handoff

import (
	"cmp"
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/system"
)

// PostgresServer is the PostgreSQL server a test of yours runs the
// harness on (VerifyOptions.PostgresURL, RunningOptions.PostgresURL):
// the one PostgresURLEnv names, else this machine's
// (postgres://postgres@127.0.0.1:5432/test?sslmode=disable). It skips t
// when the variable is off, or unset and no server answers; it fails t
// when the variable names a server that does not answer, so that a CI
// that sets it cannot skip by accident.
func PostgresServer(t testing.TB) string {
	t.Helper()
	set := os.Getenv(PostgresURLEnv)
	if set == "off" {
		t.Skipf("the PostgreSQL tests did not run: %s=off", PostgresURLEnv)
	}
	url := cmp.Or(set, backend.LocalPostgres)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if set != "" {
			t.Fatalf("%s=%s names a server that does not answer: %v", PostgresURLEnv, system.Redact(set), err)
		}
		t.Skipf("the PostgreSQL tests did not run: no server answers at %s (set %s=postgres://…)", url, PostgresURLEnv)
	}
	conn.Close(ctx)
	return url
}
