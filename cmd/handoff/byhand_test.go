package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
)

// The by-hand commands together on real files: approve, deliver, inspect.

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
	t.Parallel()
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
