package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeliverRefusesForeignTask checks that deliver will not put a task
// with foreign content into a real CRM file, and changes nothing.
func TestDeliverRefusesForeignTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	for _, args := range [][]string{
		{"approve", "--app", app, "--case", "case-104", "--title", "Call back"},
		{"deliver", "--app", app, "--crm", crm, "--fault", "offline", "--create-crm"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	before := readFiles(t, app, crm)
	code, _, stderr := runCLI(t, "deliver", "--app", app, "--crm", crm, "--fault", "foreign-task")
	if code != 2 || !strings.Contains(stderr, "foreign content into the CRM file") {
		t.Errorf("deliver --fault foreign-task: got exit %d, %q; want 2 and why", code, stderr)
	}
	if !equalFiles(before, readFiles(t, app, crm)) {
		t.Error("deliver --fault foreign-task changed a database file")
	}
}

// TestBusyCRMSaysTheAttemptIsCounted holds the CRM's write lock from
// another process's connection while deliver runs.
func TestBusyCRMSaysTheAttemptIsCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out SQLite's busy timeout (5 s)")
	}
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	mustRun(t, "approve", "--app", app, "--case", "case-1", "--title", "t")
	mustRun(t, "crm", "init", "--crm", crm)
	db, err := sql.Open("sqlite", crm)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	refused(t, "attempt 1 of 3 counted; the CRM may have acted", "deliver", "--app", app, "--crm", crm)
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "inspect", "--app", app); !strings.Contains(out, "last error local: database is busy") {
		t.Errorf("inspect after a busy CRM: got %q, want the cause as last error", out)
	}
}
