package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// approve, deliver and inspect on real files (records.go).

// TestApproveDeliverInspect runs the by-hand commands on an app database
// that approve creates, a file or a PostgreSQL schema named by URL (the
// CRM is a file on both), and reads the outcome with inspect --json.
func TestApproveDeliverInspect(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { approveDeliverInspect(t, filepath.Join(t.TempDir(), "app.db")) })
	t.Run("postgres", func(t *testing.T) { approveDeliverInspect(t, pgtest.URL(t)) })
}

func approveDeliverInspect(t *testing.T, app string) {
	crm := filepath.Join(t.TempDir(), "crm.db")
	steps := []struct {
		args   []string
		code   int
		stdout string // a part of stdout that must appear
	}{
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Call back"}, 0, "approved harbor:create-followup:v1:case-104: outbox row pending, 0 of 3 attempts"},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "lost-reply", "--create-crm"}, 0, "pending harbor:create-followup:v1:case-104: transient failure (attempt 1 of 3)"},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "crash-after-reply"}, 1, ""},
		{[]string{"deliver", "--app", app, "--crm", crm}, 0, "sent harbor:create-followup:v1:case-104: CRM task 1 (attempt 3 of 3)"},
		{[]string{"deliver", "--app", app, "--crm", crm}, 0, "idle: nothing pending"},
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Call back"}, 0, "outbox row sent, 3 of 3 attempts, CRM task 1"},
		{[]string{"inspect", "--app", app, "--crm", crm}, 0, "0 pending, 1 sent, 0 blocked"},
		{[]string{"check", "--app", app, "--crm", crm}, 0, ""},
		{[]string{"stale", "--app", app, "--older-than", "1h"}, 0, ""},
		{[]string{"upgrade", "--app", app}, 0, ""},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(stdout, s.stdout) {
			t.Fatalf("%v: got exit %d, stdout %q, stderr %q; want exit %d and %q", s.args, code, stdout, stderr, s.code, s.stdout)
		}
	}
	code, stdout, _ := runCLI(t, "inspect", "--app", app, "--crm", crm, "--json")
	var got struct {
		Counts map[string]int `json:"counts"`
		Outbox []struct {
			Key       string  `json:"key"`
			State     string  `json:"state"`
			Attempts  int     `json:"attempts"`
			RemoteID  *int64  `json:"remote_id"`
			LastError *string `json:"last_error"`
		} `json:"outbox"`
		CRMTasks []struct {
			ID  int64  `json:"id"`
			Key string `json:"key"`
		} `json:"crm_tasks"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if got.Counts["sent"] != 1 || len(got.Outbox) != 1 || got.Outbox[0].Attempts != 3 || got.Outbox[0].RemoteID == nil ||
		*got.Outbox[0].RemoteID != 1 || got.Outbox[0].LastError != nil || len(got.CRMTasks) != 1 {
		t.Errorf("inspect --json: got %+v", got)
	}
}

func TestRefusedInputLeavesDatabasesAsTheyWere(t *testing.T) {
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	garbage := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(garbage, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"approve", "--app", app, "--case", "case-104", "--title", "Call back"},
		{"deliver", "--app", app, "--crm", crm, "--fault", "offline", "--create-crm"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	before := readFiles(t, app, crm, garbage)
	for _, tt := range []struct {
		args   []string
		reason string
	}{
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Another title"}, "key conflict"},
		{[]string{"approve", "--app", app, "--case", "case/104", "--title", "Call back"}, "invalid input"},
		{[]string{"approve", "--app", app, "--case", "case-105", "--title", " "}, "invalid input"},
		{[]string{"approve", "--app", crm, "--case", "case-105", "--title", "t"}, "not this kind"},
		{[]string{"approve", "--app", garbage, "--case", "case-105", "--title", "t"}, "not this kind"},
		{[]string{"deliver", "--app", filepath.Join(dir, "missing.db"), "--crm", crm}, "does not exist"},
		{[]string{"deliver", "--app", crm, "--crm", app}, "not this kind"},
		{[]string{"inspect", "--app", app, "--crm", filepath.Join(dir, "missing.db")}, "does not exist"},
		{[]string{"inspect", "--app", garbage}, "not this kind"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.reason) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: got exit %d, stderr %q; want 1 and one line with %q", tt.args, code, stderr, tt.reason)
		}
	}
	if after := readFiles(t, app, crm, garbage); !equalFiles(before, after) {
		t.Error("refused commands changed a database file")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Error("a refused command created missing.db")
	}
}

// TestDeliverRefusesForeignTask checks that deliver will not put a task
// with foreign content into a real CRM file, and changes nothing.
func TestDeliverRefusesForeignTask(t *testing.T) {
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

// TestInspectFiltersAndTimes lists rows by state, with a limit, times and
// ages, and approvals in JSON.
func TestInspectFiltersAndTimes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for i := range 5 {
		mustRun(t, "approve", "--app", "app.db", "--case", fmt.Sprint("case-", i), "--title", "Call back")
	}
	mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db", "--create-crm")
	tests := []struct {
		args        []string
		contains    []string
		notContains []string
	}{
		{[]string{"--state", "sent"}, []string{"case-0 sent, 1 of 3 attempts, CRM task 1", "approved 20", "last attempt 20", "sent 20", " ago)"}, []string{"case-1"}},
		{[]string{"--state", "pending", "--limit", "2"}, []string{"case-1 pending", "case-2 pending", "... 2 more (--limit 0 lists all)"}, []string{"case-0", "case-3"}},
		{[]string{"--limit", "0"}, []string{"case-0", "case-4"}, []string{"more"}},
	}
	for _, tt := range tests {
		out := mustRun(t, append([]string{"inspect", "--app", "app.db"}, tt.args...)...)
		for _, want := range tt.contains {
			if !strings.Contains(out, want) {
				t.Errorf("inspect %v: no %q in:\n%s", tt.args, want, out)
			}
		}
		for _, unwanted := range tt.notContains {
			if strings.Contains(out, unwanted) {
				t.Errorf("inspect %v: %q in:\n%s", tt.args, unwanted, out)
			}
		}
	}
	out := mustRun(t, "inspect", "--app", "app.db", "--crm", "crm.db", "--state", "sent", "--json")
	for _, want := range []string{`"case_id": "case-0"`, `"title": "Call back"`, `"approved_at": "20`, `"sent_at": "20`, `"more": 0`, `"problems": []`} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect --json: no %q in:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"--state", "done"}, {"--limit", "-1"}} {
		if code, _, _ := runCLI(t, append([]string{"inspect", "--app", "app.db"}, args...)...); code != 2 {
			t.Errorf("inspect %v: got exit %d, want 2", args, code)
		}
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

// TestInspectPrintsDataOnOneLine: what inspect reads from the databases
// (a CRM task's payload and key, the audit log's actor and reason) prints
// with its characters that are not printable escaped, as %q escapes them,
// so that none breaks a line: a title with a line separator shows as
// \u2028 in its task's payload, as it does in a key conflict's message.
func TestInspectPrintsDataOnOneLine(t *testing.T) {
	for _, tt := range []struct {
		name, title, payload string
	}{
		{"line and paragraph separators", "a\u2028b\u2029c", `{"case_id":"case-1","title":"a\u2028b\u2029c"}`},
		{"next line", "a\u0085b", `{"case_id":"case-1","title":"a\u0085b"}`},
		{"format characters", "a\u200bb\u202ec\ufeffd", `{"case_id":"case-1","title":"a\u200bb\u202ec\ufeffd"}`},
		{"controls JSON leaves as they are", "a\x7fb\u009bc", `{"case_id":"case-1","title":"a\u007fb\u009bc"}`},
		{"no-break space", "a\u00a0b", `{"case_id":"case-1","title":"a\u00a0b"}`},
		{"a tag character, past U+FFFF", "a\U000e0041b", `{"case_id":"case-1","title":"a\udb40\udc41b"}`},
		{"printable text as it is", `Ruf zurück "bald" \ 🙂`, `{"case_id":"case-1","title":"Ruf zurück \"bald\" \\ 🙂"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
			mustRun(t, "approve", "--app", app, "--case", "case-1", "--title", tt.title)
			for range 3 {
				mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline", "--create-crm")
			}
			mustRun(t, "requeue", "case-1", "--app", app, "--actor", "ann\u2028bob", "--reason", "asked "+tt.title)
			mustRun(t, "deliver", "--app", app, "--crm", crm)
			out := mustRun(t, "inspect", "--app", app, "--crm", crm)
			for _, want := range []string{
				"\n  task 1 " + system.KeyPrefix + "case-1 " + tt.payload + "\n",
				` ann\u2028bob requeue ` + system.KeyPrefix + "case-1: asked " + system.OneLine(tt.title) + "\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("inspect: no %q in:\n%s", want, out)
				}
			}
			if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && r != ' ' && !strconv.IsPrint(r) }); i >= 0 {
				t.Errorf("inspect printed %q as it is:\n%s", []rune(out[i:])[0], out)
			}
			var js struct {
				CRMTasks []struct {
					Payload string `json:"payload"`
				} `json:"crm_tasks"`
			}
			if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--app", app, "--crm", crm, "--json")), &js); err != nil || len(js.CRMTasks) != 1 {
				t.Fatalf("inspect --json: %v, %+v", err, js)
			}
			var printed, stored any // the escaped payload is the same JSON value
			if err := json.Unmarshal([]byte(tt.payload), &printed); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(js.CRMTasks[0].Payload), &stored); err != nil || !reflect.DeepEqual(printed, stored) {
				t.Errorf("the printed payload %s is not the stored one, %s (%v)", tt.payload, js.CRMTasks[0].Payload, err)
			}
		})
	}
}
