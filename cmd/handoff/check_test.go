package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

// TestCheckFindsWhatBreaksFiles: check on real files finds every
// invariant it says it checks on files (1 to 5, and 9), each broken by
// files a person could be handed, and damage to each file's integrity,
// the app's and the CRM's, including an index that disagrees with its
// table, which a quick check would miss. It exits 1, names what broke,
// and leaves the files as they were.
func TestCheckFindsWhatBreaksFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	app, crm := filepath.Join(base, "app.db"), filepath.Join(base, "crm.db")
	for i := 1; i <= 3; i++ {
		mustRun(t, "approve", "--app", app, "--case", fmt.Sprint("case-", i), "--title", "Call back")
	}
	mustRun(t, "crm", "init", "--crm", crm)
	mustRun(t, "deliver", "--app", app, "--crm", crm) // case-1 sent as task 1
	// Other systems' tasks, enough that a damaged page of the CRM's file
	// lies among them, not in its header.
	onFile(t, crm, func(db *sql.DB) error {
		for i := range 400 {
			key := fmt.Sprint("other-system:", i)
			if _, err := db.Exec(`INSERT INTO tasks (key, payload) VALUES (?1, ?2); INSERT INTO keys (key, task_id, stored_at) VALUES (?1, last_insert_rowid(), 0)`,
				key, faults.ForeignPayload); err != nil {
				return err
			}
		}
		return nil
	})
	if out := mustRun(t, "check", "--app", app, "--crm", crm); !strings.Contains(out, "ok (integrity, schema, 3 rows, 401 tasks; invariants 1 to 5") {
		t.Fatalf("check before any damage: %q", out)
	}
	sqlOn := func(which, query string) func(dir string) {
		return func(dir string) {
			onFile(t, filepath.Join(dir, which), func(db *sql.DB) error { _, err := db.Exec(query); return err })
		}
	}
	for _, tt := range []struct {
		name   string
		damage func(dir string)
		want   string
	}{
		{"two tasks for a key", sqlOn("crm.db", `INSERT INTO tasks (key, payload) SELECT key, payload FROM tasks WHERE id = 1`),
			"invariant 1 (at most one CRM task per action key): " + keyOf("case-1") + " has tasks [1 402]"},
		{"an approval without its row", sqlOn("app.db", `DELETE FROM outbox WHERE key = '`+keyOf("case-2")+`'`),
			"invariant 2 (every approval has exactly one outbox row and every row its approval): approval " + keyOf("case-2") + " has 0 outbox rows"},
		{"a row without its approval", sqlOn("app.db", `PRAGMA foreign_keys = OFF; DELETE FROM approvals WHERE key = '`+keyOf("case-3")+`'`),
			"invariant 2 (every approval has exactly one outbox row and every row its approval): outbox row " + keyOf("case-3") + " has no approval"},
		{"a sent row naming a task the CRM lacks", sqlOn("app.db", `UPDATE outbox SET remote_id = 999 WHERE key = '`+keyOf("case-1")+`'`),
			"invariant 3 (a sent row names the task of its key and payload; other rows name none): " + keyOf("case-1") + " is sent as task 999, but the CRM has no task 999"},
		{"a sent row naming another key's task", sqlOn("app.db", `UPDATE outbox SET remote_id = 2 WHERE key = '`+keyOf("case-1")+`'`),
			keyOf("case-1") + " is sent as task 2, which belongs to other-system:0"},
		{"a task with other content", sqlOn("crm.db", `UPDATE tasks SET payload = '{"case_id":"case-1","title":"Call later"}' WHERE id = 1`),
			keyOf("case-1") + " is sent as task 1, which holds other content than the approval"},
		{"attempts past the budget", sqlOn("app.db", `UPDATE outbox SET attempts = 4 WHERE key = '`+keyOf("case-2")+`'`),
			"invariant 4 (attempts stay within the budget and cover every send): " + keyOf("case-2") + " has 4 attempts, the budget is 3"},
		{"a task no approval has", sqlOn("crm.db", `INSERT INTO tasks (key, payload) VALUES ('`+keyOf("case-9")+`', '{"case_id":"case-9","title":"Call back"}')`),
			"invariant 5 (no CRM task without an approval of the same key and payload, but those another system put there): task 402 has key " + keyOf("case-9") + ", which no approval has"},
		{"a sent row still leased", sqlOn("app.db", `UPDATE outbox SET lease_until = 5 WHERE key = '`+keyOf("case-1")+`'`),
			"invariant 9 (a row has at most one live lease; sent and blocked rows have none): " + keyOf("case-1") + " is sent and still leased"},
		{"the app's index disagrees with its table", sqlOn("app.db", `PRAGMA writable_schema = ON;
			UPDATE sqlite_schema SET sql = 'CREATE INDEX outbox_pending ON outbox (seq) WHERE state = ''sent''' WHERE name = 'outbox_pending'`),
			"app.db: integrity: "},
		{"a damaged page of the CRM's file", func(dir string) { damagePage(t, filepath.Join(dir, "crm.db")) }, "crm.db: integrity: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"app.db", "crm.db"} {
				b, err := os.ReadFile(filepath.Join(base, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tt.damage(dir)
			before := folder(t, dir)
			code, stdout, stderr := runCLI(t, "check", "--app", filepath.Join(dir, "app.db"), "--crm", filepath.Join(dir, "crm.db"))
			if code != 1 || !strings.Contains(stdout, tt.want) || !strings.Contains(stderr, "with the files (listed above)") {
				t.Errorf("check: exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, tt.want)
			}
			if after := folder(t, dir); len(after) != len(before) || after["app.db"] != before["app.db"] || after["crm.db"] != before["crm.db"] {
				t.Errorf("check changed the files it read")
			}
		})
	}
}

// onFile runs f on the SQLite file at path, as another program would.
func onFile(t *testing.T, path string, f func(*sql.DB) error) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := f(db); err != nil {
		t.Fatal(err)
	}
}

// damagePage overwrites the page in the middle of the file at path.
func damagePage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4096 {
		b[len(b)/2/4096*4096+i] = byte(i * 31)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
