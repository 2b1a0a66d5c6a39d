package main

import (
	"database/sql"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/system"
)

// The operator commands: requeue, reconcile and stale.

// TestOperatorActions runs requeue, reconcile and stale on a blocked, a
// sent and a leased row: each refusal exits 1 and leaves the files as
// they were, each action shows in the audit log with its actor and reason.
func TestOperatorActions(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []string{"case-1", "case-2", "case-3"} {
		mustRun(t, "approve", "--app", "app.db", "--case", c, "--title", "Call back")
	}
	mustRun(t, "crm", "init", "--crm", "crm.db")
	for range 3 {
		mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db", "--fault", "offline") // case-1 blocks
	}
	mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db") // case-2 is sent
	lease(t, "app.db", "w:1")                                   // case-3 is in flight
	osUser, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ops := writeOperatorsFile(t, "ops")
	key := system.KeyPrefix
	steps := []struct {
		args []string
		code int
		want string // in stdout or stderr
		as   string // the operator whose token the environment holds
	}{
		{[]string{"stale", "--app", "app.db", "--older-than", "1h"}, 3, key + "case-1 blocked", ""},
		{[]string{"stale", "--app", "app.db", "--older-than", "1h"}, 3, ", 3 of 3 attempts, last error transient", ""},
		{[]string{"requeue", "case-2", "--app", "app.db", "--reason", "r"}, 1, "case-2 is sent; requeue takes a blocked row", ""},
		{[]string{"requeue", "case-3", "--app", "app.db", "--reason", "r"}, 1, "case-3 is pending; requeue takes a blocked row", ""},
		{[]string{"requeue", "case-9", "--app", "app.db", "--reason", "r"}, 1, `no outbox row for "` + key + `case-9"`, ""},
		{[]string{"requeue", "harbor:x\u2028y", "--app", "app.db", "--reason", "r"}, 1, `no outbox row for "harbor:x\u2028y"`, ""},
		{[]string{"requeue", "harbor:x\u0085y\u2029", "--app", "app.db", "--reason", "r"}, 1, `no outbox row for "harbor:x\u0085y\u2029"`, ""},
		{[]string{"requeue", "case-1", "--app", "app.db", "--reason", "r", "--retention", "10s"}, 1, "check the CRM, then reconcile it", ""},
		{[]string{"requeue", "case-1", "--app", "missing.db", "--reason", "r"}, 1, "the app database missing.db does not exist", ""},
		{[]string{"reconcile", key + "case-2", "--app", "app.db", "--remote-id", "1", "--reason", "r"}, 1, "is sent already (task 1)", ""},
		{[]string{"reconcile", "case-3", "--app", "app.db", "--absent", "--reason", "r"}, 1, "worker w:1 holds " + key + "case-3", ""},
		{[]string{"reconcile", "case-9", "--app", "app.db", "--absent", "--reason", "r"}, 1, `no outbox row for "` + key + `case-9"`, ""},
		{[]string{"reconcile", "harbor:x\u2028y", "--app", "app.db", "--absent", "--reason", "r"}, 1, `no outbox row for "harbor:x\u2028y"`, ""},
		{[]string{"stale", "--app", "missing.db", "--older-than", "1h"}, 1, "missing.db", ""},
		{[]string{"requeue", "case-1", "--app", "app.db", "--token-file", ops, "--reason", "r"}, 2, "set HANDOFF_OPERATOR_TOKEN to your token from it", ""},
		{[]string{"requeue", "case-1", "--app", "app.db", "--token-file", ops, "--reason", "r"}, 2, "HANDOFF_OPERATOR_TOKEN is no token of --token-file ops", "eve"},
		{[]string{"requeue", "case-1", "--app", "app.db", "--actor", "ann", "--reason", "r"}, 2, "flag provided but not defined: -actor", ""},
		{[]string{"requeue", "case-1", "--app", "app.db", "--token-file", ops, "--reason", "the CRM is back"}, 0, "requeued " + key + "case-1: pending, 0 of 3 attempts", "ann"},
		{[]string{"stale", "--app", "app.db", "--older-than", "1h"}, 0, "nothing needs a person", ""},
		{[]string{"stale", "--app", "app.db", "--older-than", "0s"}, 3, "2 rows need a person", ""},
		{[]string{"reconcile", "--app", "app.db", "--absent", "--reason", "no task in the CRM", key + "case-1"}, 0, "reconciled " + key + "case-1 as absent", ""},
		{[]string{"reconcile", "case-1", "--app", "app.db", "--remote-id", "7", "--token-file", ops, "--reason", "found task 7"}, 0, "reconciled " + key + "case-1: sent, CRM task 7", "bob"},
		{[]string{"requeue", "case-1", "--app", "app.db", "--reason", "r"}, 1, "case-1 is sent", ""},
	}
	for _, s := range steps {
		t.Setenv("HANDOFF_OPERATOR_TOKEN", operatorTokens[s.as])
		before := folder(t, dir)
		code, stdout, stderr := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(stdout+stderr, s.want) {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d and %q", s.args, code, stdout, stderr, s.code, s.want)
		}
		if s.code == 1 && strings.Count(stderr, "\n") != 1 || strings.ContainsAny(stdout+stderr, "\u0085\u2028\u2029") {
			t.Errorf("%v: stderr %q, want one line", s.args, stderr)
		}
		if diff := cmp.Diff(before, folder(t, dir)); s.code != 0 && diff != "" {
			t.Errorf("%v changed the folder (-before +after):\n%s", s.args, diff)
		}
	}
	out := mustRun(t, "inspect", "--app", "app.db")
	for _, want := range []string{
		"audit log: 3 entries",
		"ann requeue " + key + "case-1: the CRM is back",
		osUser.Username + " reconcile-absent " + key + "case-1: no task in the CRM",
		"bob reconcile " + key + "case-1: found task 7",
		"leased by w:1 until ",
		"fence 6", // case-1: three claims, three operator actions
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect: no %q in:\n%s", want, out)
		}
	}
}

// TestRetryNow: retry-now makes the rows that wait out a backoff due now,
// lists them and audits each; without a reason it is a usage error and
// changes nothing.
func TestRetryNow(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []string{"case-1", "case-2"} {
		mustRun(t, "approve", "--app", "app.db", "--case", c, "--title", "Call back")
	}
	// case-1 waits out an hour of backoff; case-2 is due.
	db, err := sql.Open("sqlite", "app.db")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`UPDATE outbox SET next_attempt_at = ?, last_error = 'transient' WHERE key = ?`, time.Now().Add(time.Hour).UnixMilli(), system.KeyPrefix+"case-1")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "retry-now", "--app", "app.db"); code != 2 || !strings.Contains(stderr, "missing --reason") {
		t.Errorf("retry-now without --reason: exit %d, %q; want 2 and missing --reason", code, stderr)
	}
	t.Setenv("HANDOFF_OPERATOR_TOKEN", operatorTokens["ann"])
	out := mustRun(t, "retry-now", "--app", "app.db", "--reason", "receiver back", "--token-file", writeOperatorsFile(t, "ops"))
	if !strings.Contains(out, "retry-now: 1 waiting row due now (by ann)") || !strings.Contains(out, system.KeyPrefix+"case-1") || strings.Contains(out, "case-2") {
		t.Errorf("retry-now said %q; want case-1 alone made due", out)
	}
	if out := mustRun(t, "inspect", "--app", "app.db"); !strings.Contains(out, "retry-now") {
		t.Errorf("the audit log has no retry-now line:\n%s", out)
	}
}

// operatorTokens are the tokens of writeOperatorsFile's operators; eve's
// is in no file.
var operatorTokens = map[string]string{"ann": "ann-token-0123456789", "bob": "bob-token-0123456789", "eve": "eve-token-0123456789", "": ""}

// writeOperatorsFile writes a token file of ann and bob at name in the
// current folder, and returns name.
func writeOperatorsFile(t *testing.T, name string) string {
	t.Helper()
	text := "ann " + operatorTokens["ann"] + "\nbob " + operatorTokens["bob"] + "\n"
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}
