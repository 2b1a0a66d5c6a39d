package outbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/system"
)

// localPostgres is the server the PostgreSQL tests try when
// HANDOFF_POSTGRES_URL is unset.
const localPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// postgresURL returns the PostgreSQL server the tests run on
// (HANDOFF_POSTGRES_URL, or the local one), or skips the test in one line
// when it does not answer and the variable is unset, or when it is off;
// with the variable set to a URL, a server that does not answer fails the
// test.
func postgresURL(t *testing.T) string {
	t.Helper()
	set := os.Getenv(handoff.PostgresURLEnv)
	if set == "off" {
		t.Skipf("PostgreSQL suite not run: %s=off", handoff.PostgresURLEnv)
	}
	u := cmp.Or(set, localPostgres)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		if set != "" {
			t.Fatalf("the PostgreSQL server at %s=%s does not answer: %v", handoff.PostgresURLEnv, system.Redact(set), err)
		}
		t.Skipf("PostgreSQL suite not run: no server answers at %s; set %s=postgres://… to run it", localPostgres, handoff.PostgresURLEnv)
	}
	return u
}

// newSchema makes a schema of the test's own on the server and returns
// the app database's URL in it (as the harness gives OpenApp one); the
// schema is dropped when the test ends.
func newSchema(t *testing.T, server string) string {
	t.Helper()
	schema := "goqite_example_" + strings.ToLower(rand.Text()[:16])
	db, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.ExecContext(context.Background(), `drop schema if exists `+schema+` cascade`)
		db.Close()
	})
	if _, err := db.ExecContext(t.Context(), `create schema `+schema); err != nil {
		t.Fatal(err)
	}
	target, err := system.WithSchema(server, schema)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// TestVerifyPostgres checks the recommended variant with goqite's table
// and the app's in PostgreSQL: the testdata scenarios and the handoff's
// corpus of scenarios for PostgreSQL, then the random sequences.
func TestVerifyPostgres(t *testing.T) {
	u := postgresURL(t)
	handoff.Verify(t, Design("goqite", Recommended, virtualClock(t)), handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true,
		Backend: handoff.Postgres, PostgresURL: u, Enumerate: true})
}
