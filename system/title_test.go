package system_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// oddTitle holds what a database may mangle: NUL (which PostgreSQL's TEXT
// cannot hold), a backslash (which bytea's text syntax reads as an escape,
// here followed by what looks like one), non-ASCII, and white space to
// trim.
const oddTitle = " Call\x00back \\x00 \\\\ é\x01 "

// TestTitleRoundTrips records approvals whose titles hold NUL and
// backslashes, through RecordApproval and, on PostgreSQL, through a
// caller's pgx transaction (RecordApprovalPgx), and reads each back
// through Snapshot as it was approved, trimmed; a repeat is a harmless
// one.
func TestTitleRoundTrips(t *testing.T) { eachBackend(t, testTitleRoundTrips) }

func testTitleRoundTrips(t *testing.T, b backend) {
	ctx := t.Context()
	target := b.app(t)
	app, err := system.Open(ctx, target, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	want := []system.Approval{mustApproval(t, "case-1", oddTitle)}
	if _, err := app.RecordApproval(ctx, "case-1", oddTitle); err != nil {
		t.Fatalf("approving %q: %v", oddTitle, err)
	}
	if _, err := app.RecordApproval(ctx, "case-1", oddTitle); err != nil {
		t.Fatalf("approving %q again: %v", oddTitle, err)
	}
	if system.IsPostgres(target) {
		want = append(want, mustApproval(t, "case-2", oddTitle))
		tx, err := serverConn(t).Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := app.RecordApprovalPgx(ctx, tx, "case-2", oddTitle); err != nil {
			t.Fatalf("approving %q in a pgx transaction: %v", oddTitle, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s := snapshot(t, app)
	if len(s.Approvals) != len(want) || len(s.Outbox) != len(want) {
		t.Fatalf("%d approvals and %d rows, want %d of each: %+v", len(s.Approvals), len(s.Outbox), len(want), s)
	}
	for i, a := range s.Approvals {
		if a != want[i] {
			t.Errorf("approval %d reads back as %+v, want %+v", i, a, want[i])
		}
	}
}

func mustApproval(t *testing.T, caseID, title string) system.Approval {
	t.Helper()
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// postgresSchemaV1 is the first PostgreSQL schema, whose approvals.title
// is TEXT: what an app database made before version 2 holds. It is kept
// as it was released, not derived from today's schema, so that a later
// change to the schema cannot change what the test migrates from.
const postgresSchemaV1 = `
	CREATE TABLE handoff_version (
		kind    TEXT NOT NULL,
		version INTEGER NOT NULL
	);
	CREATE TABLE approvals (
		seq     BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
		key     TEXT PRIMARY KEY,
		case_id TEXT NOT NULL,
		title   TEXT NOT NULL,
		payload TEXT NOT NULL
	);
	CREATE TABLE outbox (
		seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		key              TEXT NOT NULL UNIQUE REFERENCES approvals (key),
		state            TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
		attempts         INTEGER NOT NULL CHECK (attempts >= 0),
		remote_id        BIGINT CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
		last_error       TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted', 'deadline', 'retention-expired', 'rejected')
		                             OR last_error LIKE 'local: _%'),
		created_at       BIGINT NOT NULL DEFAULT 0,
		next_attempt_at  BIGINT NOT NULL DEFAULT 0,
		first_claimed_at BIGINT NOT NULL DEFAULT 0,
		last_attempt_at  BIGINT NOT NULL DEFAULT 0,
		sent_at          BIGINT NOT NULL DEFAULT 0,
		lease_owner      TEXT CHECK (lease_owner IS NULL OR state = 'pending'),
		lease_until      BIGINT NOT NULL DEFAULT 0,
		fence            BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
	CREATE INDEX outbox_lease ON outbox (lease_owner) WHERE lease_owner IS NOT NULL;
	CREATE TABLE meta (
		name  TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	CREATE TABLE audit (
		seq    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at     BIGINT NOT NULL,
		actor  TEXT NOT NULL,
		action TEXT NOT NULL,
		key    TEXT NOT NULL,
		reason TEXT NOT NULL
	);
	INSERT INTO handoff_version (kind, version) VALUES ('app', 1);`

// v1Title is a title a version-1 schema could hold: anything but NUL.
const v1Title = `Call \x00 back — é`

// makeV1 makes, at url, an app database of schema version 1 holding one
// approval of v1Title and its pending row, as a handoff of that version
// wrote them.
func makeV1(t *testing.T, url string) system.Approval {
	t.Helper()
	a := mustApproval(t, "case-1", v1Title)
	schema := schemaOf(url)
	conn := serverConn(t)
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+schema+`; SET search_path = `+schema+`;`+postgresSchemaV1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO `+schema+`.approvals (key, case_id, title, payload) VALUES ($1, $2, $3, $4)`,
		a.Key, a.CaseID, a.Title, a.Payload); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO `+schema+`.outbox (key, state, attempts) VALUES ($1, 'pending', 0)`, a.Key); err != nil {
		t.Fatal(err)
	}
	return a
}

// schemaState is the version a schema records and the type of its
// approvals.title.
func schemaState(t *testing.T, url string) string {
	t.Helper()
	schema := schemaOf(url)
	rows := query(t, url, `SELECT (SELECT version FROM `+schema+`.handoff_version)::text || ' ' || data_type
		FROM information_schema.columns WHERE table_schema = '`+schema+`' AND table_name = 'approvals' AND column_name = 'title'`)
	if len(rows) != 1 {
		t.Fatalf("schema %s: %v", schema, rows)
	}
	return rows[0][0]
}

// TestPostgresMigratesVersion1: a read-only open of a version-1 schema
// reads it as it is and changes nothing; an open for writing migrates it
// to version 2 (approvals.title BYTEA), keeping the titles it holds, and
// then takes a title with NUL. Openers that race on one version-1 schema
// all open it, and it is migrated once.
func TestPostgresMigratesVersion1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	old := makeV1(t, url)

	ro, err := system.OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatalf("read-only open of a version-1 schema: %v", err)
	}
	s := snapshot(t, ro)
	ro.Close()
	if len(s.Approvals) != 1 || s.Approvals[0] != old || len(s.Outbox) != 1 {
		t.Errorf("read-only, version 1 reads %+v; want the approval %+v and its row", s, old)
	}
	if got := schemaState(t, url); got != "1 text" {
		t.Errorf("after a read-only open: version and title type %q, want 1 text", got)
	}

	app, err := system.Open(ctx, url, system.Options{})
	if err != nil {
		t.Fatalf("opening a version-1 schema for writing: %v", err)
	}
	defer app.Close()
	if got, want := schemaState(t, url), fmt.Sprintf("%d bytea", system.PostgresVersion); got != want {
		t.Errorf("after an open for writing: version and title type %q, want %s (the latest version)", got, want)
	}
	if _, err := app.RecordApproval(ctx, "case-2", oddTitle); err != nil {
		t.Fatalf("approving %q after the migration: %v", oddTitle, err)
	}
	if _, err := app.RecordApproval(ctx, old.CaseID, v1Title); err != nil {
		t.Errorf("approving the migrated approval again: %v, want a harmless repeat", err)
	}
	want := []system.Approval{old, mustApproval(t, "case-2", oddTitle)}
	for _, o := range []struct {
		name string
		open func() (*system.Outbox, error)
	}{
		{"the migrating handle", func() (*system.Outbox, error) { return app, nil }},
		{"a read-only handle", func() (*system.Outbox, error) { return system.OpenReadOnly(ctx, url) }},
	} {
		h, err := o.open()
		if err != nil {
			t.Fatal(err)
		}
		s := snapshot(t, h)
		if h != app {
			h.Close()
		}
		if len(s.Approvals) != len(want) || s.Approvals[0] != want[0] || s.Approvals[1] != want[1] {
			t.Errorf("%s reads %+v, want %+v", o.name, s.Approvals, want)
		}
	}

	raced := pgtest.URL(t)
	makeV1(t, raced)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			o, err := system.Open(ctx, raced, system.Options{})
			if err == nil {
				_, err = o.RecordApproval(ctx, "case-2", oddTitle)
				o.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("openers racing on a version-1 schema: %v", err)
	}
	if got, want := schemaState(t, raced), fmt.Sprintf("%d bytea", system.PostgresVersion); got != want {
		t.Errorf("after racing openers: version and title type %q, want %s (the latest version)", got, want)
	}
}
