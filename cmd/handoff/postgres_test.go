package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestCommandsRefuseAnEmptySchema: a URL whose schema holds no app
// database is refused by every command that needs one, as a missing file
// is, and nothing is created for it. (TestApproveDeliverInspect runs the
// commands on a schema that holds one.)
func TestCommandsRefuseAnEmptySchema(t *testing.T) {
	missing := pgtest.URL(t)
	crm := filepath.Join(t.TempDir(), "crm.db")
	for _, args := range [][]string{
		{"deliver", "--app", missing, "--crm", crm},
		{"work", "--app", missing, "--crm", crm, "--until-idle"},
		{"inspect", "--app", missing},
		{"check", "--app", missing},
		{"stale", "--app", missing, "--older-than", "1h"},
		{"requeue", "harbor:create-followup:v1:case-104", "--app", missing, "--reason", "r"},
		{"reconcile", "harbor:create-followup:v1:case-104", "--app", missing, "--absent", "--reason", "r"},
		{"upgrade", "--app", missing},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "holds no handoff app database") {
			t.Errorf("%v: got exit %d and stderr %q, want 1 and 'holds no handoff app database'", args, code, stderr)
		}
	}
	if _, err := system.OpenReadOnly(t.Context(), missing); !errors.Is(err, system.ErrNotFound) {
		t.Errorf("after the refused commands, opening %s: got %v, want ErrNotFound", missing, err)
	}
}

// TestUnreachableServer: an app database on a server that does not
// answer is refused on one line that says why, without the password:
// exit status 1 from a command on real files (handoff-sim's tests show
// the harness's 4).
func TestUnreachableServer(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"inspect", "--app", "postgres://u:s3cret@127.0.0.1:1/test?schema=x"}, 1},
		{[]string{"approve", "--app", "postgres://u:s3cret@127.0.0.1:1/test?schema=x", "--case", "c-1", "--title", "t"}, 1},
	} {
		args := tt.args
		code, stdout, stderr := runCLI(t, args...)
		if code != tt.code || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "cannot connect to") ||
			!strings.Contains(stderr, "connection refused") || strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d and one line saying why, without the password", args, code, stdout, stderr, tt.code)
		}
	}
}

// TestUpgradeMigratesAPostgresSchema: upgrade brings a schema an older
// handoff made (version 1: the title TEXT, no index of the blocked rows,
// no history, no mark of a retry hint) to this one's, as a writing command would, and its rows
// keep their titles.
func TestUpgradeMigratesAPostgresSchema(t *testing.T) {
	app := pgtest.URL(t)
	if code, _, stderr := runCLI(t, "approve", "--app", app, "--case", "case-104", "--title", `Call "back" \ now`); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	conn := pgtest.Conn(t)
	schema := pgtest.Schema(t, app)
	for _, stmt := range []string{ // back to version 1, as an older handoff left it
		"ALTER TABLE " + schema + ".approvals ALTER COLUMN title TYPE TEXT USING convert_from(title, 'UTF8')",
		"DROP INDEX " + schema + ".outbox_blocked",
		"DROP TABLE " + schema + ".history",
		"ALTER TABLE " + schema + ".outbox DROP COLUMN retry_hinted",
		"UPDATE " + schema + ".handoff_version SET version = 1",
	} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"upgraded in place from schema version 1; up to date\n", "up to date already; nothing changed\n"} {
		if code, stdout, stderr := runCLI(t, "upgrade", "--app", app); code != 0 || !strings.HasSuffix(stdout, want) {
			t.Fatalf("upgrade: exit %d, stdout %q, stderr %q; want it to end %q", code, stdout, stderr, want)
		}
	}
	var version int
	var column string
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+schema+".handoff_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'approvals' AND column_name = 'title'", schema).Scan(&column); err != nil {
		t.Fatal(err)
	}
	var indexed, hinted bool
	if err := conn.QueryRow(t.Context(), "SELECT count(*) = 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'outbox_blocked'", schema).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT count(*) = 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'outbox' AND column_name = 'retry_hinted'", schema).Scan(&hinted); err != nil {
		t.Fatal(err)
	}
	if version != 5 || column != "bytea" || !indexed || !hinted {
		t.Errorf("after upgrade: version %d, title %s, blocked rows indexed %v, retry hints marked %v; want 5, bytea, indexed, marked", version, column, indexed, hinted)
	}
	o, err := system.OpenReadOnly(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	snap, err := o.Snapshot(t.Context())
	if err != nil || len(snap.Approvals) != 1 || snap.Approvals[0].Title != `Call "back" \ now` {
		t.Errorf("after upgrade: %+v, %v; want the approval with its title", snap.Approvals, err)
	}
}
