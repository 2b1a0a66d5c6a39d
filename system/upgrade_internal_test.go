package system

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// schemaAt writes a database of kind k at schema version v, as the
// release of that version did, with stmts run after.
func schemaAt(t *testing.T, path string, k kind, v int, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := append(slices.Clone(k.migrations[:v]), fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d", k.appID, v))
	for _, s := range append(all, stmts...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(s, err)
		}
	}
}

// TestUpgradedRowsKeepTheirWindows: after a lost reply under the first
// release (the CRM holds task 1, the row is pending with an attempt), the
// upgraded files count the receiver's memory of the key and the row's
// first claim from the upgrade: a retry within the retention window is a
// replay, a claim past it blocks, and the time budget starts then too.
func TestUpgradedRowsKeepTheirWindows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const key = KeyPrefix + "case-1"
	payload := `{"case_id":"case-1","title":"Call"}`
	upgraded := func(t *testing.T, clock *time.Time) (*Outbox, *CRM) {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		schemaAt(t, app, appDatabase, 1,
			fmt.Sprintf(`INSERT INTO approvals VALUES ('%s', 'case-1', 'Call', '%s')`, key, payload),
			fmt.Sprintf(`INSERT INTO outbox (key, state, attempts, last_error) VALUES ('%s', 'pending', 1, 'transient')`, key))
		schemaAt(t, crm, crmDatabase, 1, fmt.Sprintf(`INSERT INTO tasks (key, payload) VALUES ('%s', '%s')`, key, payload))
		now := func() time.Time { return *clock }
		c, err := OpenCRMWith(ctx, crm, CRMOptions{Durability: ProcessSafe, Retention: 24 * time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		o, err := Open(ctx, app, Options{Durability: ProcessSafe, MaxAge: 48 * time.Hour, Harness: Harness{Now: now}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o, c
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	clock := start
	o, c := upgraded(t, &clock)
	clock = clock.Add(time.Hour)
	if d, err := o.DeliverOne(ctx, c); err != nil || d.Result != ResultSent || d.RemoteID != 1 {
		t.Errorf("a retry within the window after the upgrade: got %+v, %v; want the replay of task 1", d, err)
	}
	if tasks, _ := c.Tasks(ctx); len(tasks) != 1 {
		t.Errorf("got %d tasks, want 1", len(tasks))
	}

	clock = start
	o, c = upgraded(t, &clock)
	clock = clock.Add(24*time.Hour - DefaultSendTimeout)
	if d, err := o.DeliverOne(ctx, c); err != nil || d.Result != ResultBlocked || d.LastError != LastErrorRetentionExpired {
		t.Errorf("a claim past the window after the upgrade: got %+v, %v; want blocked, retention-expired", d, err)
	}
	if tasks, _ := c.Tasks(ctx); len(tasks) != 1 {
		t.Errorf("got %d tasks, want 1", len(tasks))
	}
}

// TestRowsWaitingBeforeRetryHintsAreBackoffs: a row that waits after a
// transient failure in a file of schema version 4, which kept no mark of
// a retry hint, is taken for a backoff once the file is upgraded, and
// hastened when the receiver answers again.
func TestRowsWaitingBeforeRetryHintsAreBackoffs(t *testing.T) {
	t.Parallel()
	const key = KeyPrefix + "case-1"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "app.db")
	schemaAt(t, path, appDatabase, 4,
		fmt.Sprintf(`INSERT INTO approvals VALUES ('%s', 'case-1', 'Call', '{"case_id":"case-1","title":"Call"}')`, key),
		fmt.Sprintf(`INSERT INTO outbox (key, state, attempts, last_error, created_at, next_attempt_at, first_claimed_at, last_attempt_at)
			VALUES ('%s', 'pending', 1, 'transient', %d, %d, %[2]d, %[2]d)`, key, millis(now), millis(now.Add(time.Hour))))
	o, err := Open(t.Context(), path, Options{Durability: ProcessSafe, Harness: Harness{Now: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if n, err := o.Hasten(t.Context()); n != 1 || err != nil {
		t.Errorf("Hasten after the upgrade moved %d rows, %v; want the row waiting an hour", n, err)
	}
}

// TestEveryPostgresVersionMigrates: every PostgreSQL schema version below
// the current one has a migration, and it records the next version; a
// missing one would commit nothing and leave the schema where it was.
func TestEveryPostgresVersionMigrates(t *testing.T) {
	t.Parallel()
	for v := 1; v < postgresVersion; v++ {
		if want := fmt.Sprintf("SET version = %d", v+1); !strings.Contains(migrations[v], want) {
			t.Errorf("the migration from version %d is %q, want one that says %q", v, migrations[v], want)
		}
	}
	if len(migrations) != postgresVersion-1 {
		t.Errorf("%d migrations for versions 1 to %d", len(migrations), postgresVersion-1)
	}
}
