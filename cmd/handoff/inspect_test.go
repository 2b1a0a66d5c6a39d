package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/system"
)

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

// TestInspectShowsTheLastOfTheAuditLog: past auditInText entries, the
// text shows the newest ones, and says how many it leaves to --json.
func TestInspectShowsTheLastOfTheAuditLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, err := system.Open(t.Context(), filepath.Join(dir, "app.db"), system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries := auditInText + 1
	for i := range entries {
		key, err := app.RecordApproval(t.Context(), fmt.Sprint("case-", i), "Call back")
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Reconcile(t.Context(), key, int64(i+1), "ann", fmt.Sprintf("found as task %d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	app.Close()
	out := mustRun(t, "inspect", "--app", filepath.Join(dir, "app.db"))
	want := fmt.Sprintf("audit log: %d entries, the last %d (--json has all)", entries, auditInText)
	if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("found as task %d\n", entries)) || strings.Contains(out, "found as task 1\n") {
		t.Errorf("inspect: want %q, the newest entry and not the oldest, in:\n%s", want, out)
	}
}

// TestInspectPrintsDataOnOneLine: what inspect reads from the databases
// (a CRM task's payload and key, the audit log's actor and reason) prints
// with its characters that are not printable escaped, as %q escapes them,
// so that none breaks a line: a title with a line separator shows as
// \u2028 in its task's payload, as it does in a key conflict's message.
func TestInspectPrintsDataOnOneLine(t *testing.T) {
	t.Parallel()
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
			mustRun(t, "requeue", "case-1", "--app", app, "--reason", "asked\u2028by ann: "+tt.title)
			mustRun(t, "deliver", "--app", app, "--crm", crm)
			out := mustRun(t, "inspect", "--app", app, "--crm", crm)
			for _, want := range []string{
				"\n  task 1 " + system.KeyPrefix + "case-1 " + tt.payload + "\n",
				` requeue ` + system.KeyPrefix + `case-1: asked\u2028by ann: ` + system.OneLine(tt.title) + "\n",
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
