package main

import (
	"os"
	"strings"
	"testing"
)

// TestMessagesSayWhatToDo: where a person's command cannot go on, or its
// answer could be misread, the message says what to do.
func TestMessagesSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "Call back")
	for _, tt := range []struct {
		args     []string
		code     int
		want     string // in stdout or stderr
		wantNot  string
		onStdout bool
	}{
		{[]string{"work", "--app", "app.db", "--crm", "crm.db", "--until-idle"}, 1,
			"the CRM database crm.db does not exist; create it with handoff crm init --crm crm.db (or give the receiver's URL with --crm-url)", "", false},
		{[]string{"stale", "--app", "app.db", "--older-than", "1d"}, 2,
			`--older-than is "1d", not a duration: write a number and a unit, h, m, s or ms, such as 30s, 90m, or 24h for a day`, "parse error", false},
		{[]string{"work", "--app", "app.db", "--crm", "crm.db", "--send-timeout", "10"}, 2,
			`--send-timeout is "10", not a duration`, "parse error", false},
		{[]string{"check", "--app", "app.db"}, 0,
			"app.db: ok (integrity, schema, 1 row; invariants 2 and 4 hold); no CRM given, so no task was read and invariants 1, 3, 5 and the CRM's identity were not checked: pass --crm PATH", "0 tasks", true},
		{[]string{"check", "--app", "app.db", "--json"}, 0, `"tasks": null`, `"tasks": 0`, true},
		{[]string{"ui", "--app", "app.db", "--crm", "crm.db"}, 1, "the CRM database crm.db does not exist", "", false},
	} {
		code, stdout, stderr := runCLI(t, tt.args...)
		got := stderr
		if tt.onStdout {
			got = stdout
		}
		if code != tt.code || !strings.Contains(got, tt.want) || tt.wantNot != "" && strings.Contains(stdout+stderr, tt.wantNot) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q (and not %q)", tt.args, code, stdout, stderr, tt.code, tt.want, tt.wantNot)
		}
	}
}

// TestMessagesNameTheEnvironment: an error caused by the environment's
// HANDOFF_POSTGRES_URL names that variable, not a --postgres-url the
// user never passed, and never shows its password; a --postgres-url
// given is named as the flag.
func TestMessagesNameTheEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		env     string
		args    []string
		code    int
		want    string
		wantNot string
	}{
		{"postgres//alice:pw-9f7a@h/db", []string{"replay", "--backend", "postgres"}, 2,
			`HANDOFF_POSTGRES_URL "postgres//…@h/db" is not a PostgreSQL URL (postgres://…); it looks like a mistyped URL`, "--postgres-url"},
		{"mysql://h/db", []string{"explore", "--backend", "postgres"}, 2,
			`HANDOFF_POSTGRES_URL "mysql://h/db" is not a PostgreSQL URL`, "--postgres-url"},
		{"postgres://nobody:pw-9f7a@127.0.0.1:1/none", []string{"replay", "--backend", "postgres", "--connect-wait", "100ms"}, 4,
			"the server of HANDOFF_POSTGRES_URL: ", "--postgres-url"},
		{"postgres://nobody@127.0.0.1:1/none", []string{"replay", "--backend", "postgres", "--postgres-url", "mysql://h/db"}, 2,
			`--postgres-url "mysql://h/db" is not a PostgreSQL URL`, "HANDOFF_POSTGRES_URL"},
	} {
		t.Setenv("HANDOFF_POSTGRES_URL", tt.env)
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Contains(stdout+stderr, tt.wantNot) || strings.Contains(stdout+stderr, "pw-9f7a") {
			t.Errorf("%s=%s %v: exit %d, stderr %q; want %d and %q, not %q nor the password", "HANDOFF_POSTGRES_URL", tt.env, tt.args, code, stderr, tt.code, tt.want, tt.wantNot)
		}
	}
	if entries, err := os.ReadDir("."); err != nil || len(entries) != 0 {
		t.Errorf("the refused commands left %d entries in the folder (%v)", len(entries), err)
	}
}
