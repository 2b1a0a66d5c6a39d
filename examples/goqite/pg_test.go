package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"strings"
	"testing"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/system"
)

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
	u := handoff.PostgresServer(t)
	handoff.Verify(t, Design("goqite", Recommended, virtualClock(t)), handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true,
		Backend: handoff.Postgres, PostgresURL: u, Enumerate: true})
}
