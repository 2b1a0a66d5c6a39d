package main

import (
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
