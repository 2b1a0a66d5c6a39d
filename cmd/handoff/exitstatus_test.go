package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadPathOrURLIsAUsageError: every command that takes a database
// path, a PostgreSQL URL or a receiver URL refuses one that names none
// (a mistyped URL, SQLite's in-memory database, a URI) with exit status
// 2, a message that names what is wrong, a pointer to its help, and
// nothing written where it runs.
func TestBadPathOrURLIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crm := filepath.Join(dir, "crm.db")
	if code, _, stderr := runCLI(t, "crm", "init", "--crm", crm); code != 0 {
		t.Fatalf("crm init: %d %s", code, stderr)
	}
	app := filepath.Join(dir, "app.db")
	if code, _, stderr := runCLI(t, "approve", "--app", app, "--case", "case-1", "--title", "t"); code != 0 {
		t.Fatalf("approve: %d %s", code, stderr)
	}
	before := readFiles(t, app, crm)
	for _, bad := range []struct{ path, says string }{
		{"postgres//u@h/db", "looks like a mistyped URL"},
		{":memory:", "in-memory database"},
		{"file:app.db", "is a URI"},
	} {
		for _, args := range [][]string{
			{"approve", "--app", bad.path, "--case", "case-1", "--title", "t"},
			{"deliver", "--app", bad.path, "--crm", crm},
			{"deliver", "--app", app, "--crm", bad.path},
			{"work", "--app", bad.path, "--crm", crm},
			{"inspect", "--app", bad.path},
			{"check", "--app", bad.path},
			{"check", "--app", app, "--crm", bad.path},
			{"stale", "--app", bad.path, "--older-than", "1h"},
			{"ui", "--app", bad.path},
			{"requeue", "harbor:create-followup:v1:case-1", "--app", bad.path, "--reason", "r"},
			{"retry-now", "--app", bad.path, "--reason", "r"},
			{"reconcile", "harbor:create-followup:v1:case-1", "--app", bad.path, "--absent", "--reason", "r"},
			{"crm", "init", "--crm", bad.path},
			{"crm", "serve", "--crm", bad.path},
			{"upgrade", "--app", bad.path},
			{"upgrade", "--crm", bad.path},
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, _, stderr := runCLI(t, args...)
				if code != 2 || !strings.Contains(stderr, bad.says) || !strings.Contains(stderr, "see handoff help "+args[0]) {
					t.Errorf("exit %d, stderr %q; want 2, saying %q, and where the help is", code, stderr, bad.says)
				}
			})
		}
	}
	for _, args := range [][]string{
		{"deliver", "--app", app, "--crm-url", "http:/127.0.0.1:1"},
		{"work", "--app", app, "--crm-url", "htp://127.0.0.1:1"},
		{"check-receiver", "http:/127.0.0.1:1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, "see handoff help "+args[0]) {
				t.Errorf("exit %d, stderr %q; want 2 and where the help is", code, stderr)
			}
		})
	}
	if after := readFiles(t, app, crm); string(after[app]) != string(before[app]) || string(after[crm]) != string(before[crm]) {
		t.Error("a refused command changed a database")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != "app.db" && name != "crm.db" && !strings.HasPrefix(name, "app.db-") && !strings.HasPrefix(name, "crm.db-") {
			t.Errorf("a refused command left %s behind", name)
		}
	}
}

// TestTrialUnreachableServer: trial on a PostgreSQL server that does not
// answer ends with exit status 4 (the environment, not the outbox), on
// one line that names the variable the URL came from and the
// connections the run needs.
func TestTrialUnreachableServer(t *testing.T) {
	t.Setenv("HANDOFF_POSTGRES_URL", "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	code, _, stderr := runCLI(t, "trial", "--kills", "1", "--backend", "postgres", "--connect-wait", "200ms", "--dir", t.TempDir())
	if code != 4 || !strings.Contains(stderr, "the server of HANDOFF_POSTGRES_URL") || !strings.Contains(stderr, "this run holds at most 26 connections") ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want 4, the variable named and the connections needed, on one line", code, stderr)
	}
}
