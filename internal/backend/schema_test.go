package backend

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestSchemasLeftBehindAreDropped: a schema whose process ended without
// dropping it (here its owning session ends, as when the process is
// killed) is dropped by the next newSchema on the server, and a schema
// still in use is kept, whichever process made it.
func TestSchemasLeftBehindAreDropped(t *testing.T) {
	server := pgtest.Server(t)
	t.Parallel()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exists := func(name string) bool {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	made := map[string]*Schema{}
	for _, role := range []string{"left", "live"} {
		s, err := NewSchema(ctx, server, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !exists(s.name) {
			t.Fatalf("NewSchema did not make schema %s", s.name)
		}
		made[role] = s
	}
	defer made["live"].Close(ctx)
	left := made["left"]
	pid := left.owner.PgConn().PID()
	if err := left.owner.Close(ctx); err != nil { // as a killed process's session ends: its schema stays
		t.Fatal(err)
	}
	for ended := false; !ended; {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		ended = n == 0
	}
	next, err := NewSchema(ctx, server, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	if exists(left.name) {
		t.Errorf("schema %s, whose session ended, was not dropped", left.name)
	}
	if !exists(made["live"].name) {
		t.Errorf("schema %s, still in use, was dropped", made["live"].name)
	}
}
