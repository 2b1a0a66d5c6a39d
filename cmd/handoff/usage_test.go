package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Usage errors and the exit-status rule: flags, arguments and numbers
// out of range, each refused with exit status 2 before any file is touched.

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	for _, args := range [][]string{
		{},
		{"launch"},
		{"approve", "--app", app, "--title", "t"},
		{"approve", "--app", app, "--case", "c", "--title", "t", "extra"},
		{"deliver", "--app", app},
		{"deliver", "--app", app, "--crm", "crm.db", "--fault", "meteor"},
		{"inspect"},
		{"explore", "--checks", "many"},
		{"explore", "--design", "nonexistent"},
		{"explore", "--transport", "pigeon"},
		{"explore", "--transport", "http", "--design", "check-then-create"},
		{"replay", "--transport", "HTTP"},
		{"demo", "--json=maybe"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: got exit %d and stderr %q, want 2 and a message", args, code, stderr)
		}
	}
	if _, err := os.Stat(app); !os.IsNotExist(err) {
		t.Errorf("a usage error created %s", app)
	}
}

// TestExitStatusRule checks the one rule: 2 for a usage error (bad flags,
// unknown command, design or fault names, numbers out of range), printed
// as one line and a pointer to the command's help; 1 for refused or failed
// work, one line; 0 done.
func TestExitStatusRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	if code, _, stderr := runCLI(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	tests := []struct {
		args []string
		code int
		want string // in the first line of stderr
	}{
		{[]string{"launch"}, 2, `unknown command "launch"`},
		{[]string{"help", "launch"}, 2, `unknown command "launch"`},
		{[]string{"help", "approve", "deliver"}, 2, "help takes one command"},
		{[]string{"version", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"inspect", "--app", app, "--state", "done"}, 2, `--state is "done", want pending, sent, blocked or all`},
		{[]string{"crm", "nope", "--crm", crm}, 2, `unknown subcommand "nope"; want init or serve`},
		{[]string{"crm", "serve", "--crm", crm, "--retention", "500ms"}, 2, "--retention is 500ms, want 0 (forever) or 1s or more"},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "meteor"}, 2, `unknown fault "meteor"`},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "foreign-task"}, 2, "exists only in scenarios"},
		{[]string{"deliver", "--app", app}, 2, "missing --crm"},
		{[]string{"approve", "--app", app, "--case", "casé", "--title", "t"}, 1, `case id "casé" has 'é' at character 4`},
		{[]string{"deliver", "--app", filepath.Join(dir, "missing.db"), "--crm", crm}, 1, "does not exist"},
		{[]string{"demo", "--dir", "postgres//h/db"}, 2, `--dir "postgres//h/db" looks like a mistyped URL`},
		{[]string{"trial", "--kills", "1", "--dir", "postgres:/h/db"}, 2, `--dir "postgres:/h/db" looks like a mistyped URL`},
		{[]string{"deliver", "--app", app, "--crm-url", "http:/127.0.0.1:1"}, 2, `--crm-url "http:/127.0.0.1:1" looks like a mistyped URL`},
		{[]string{"approve", "--app", "postgres//u:pw@h/db", "--case", "c", "--title", "t"}, 2, `"postgres//…@h/db" looks like a mistyped URL`},
		{[]string{"trial", "--backend", "postgres", "--postgres-url", "postgres:/h/db"}, 2, `--postgres-url "postgres:/h/db" is not a PostgreSQL URL (postgres://…); it looks like a mistyped URL`},
		{[]string{"version"}, 0, ""},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, tt.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		wantLines := map[int]int{0: 1, 1: 1, 2: 2}[tt.code]
		if tt.code == 0 && stderr == "" {
			lines = nil
			wantLines = 0
		}
		if code != tt.code || len(lines) != wantLines || wantLines > 0 && !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want %d, %d line(s), the first with %q", tt.args, code, stderr, tt.code, wantLines, tt.want)
			continue
		}
		if tt.code == 2 && !strings.HasPrefix(lines[1], "see handoff help") {
			t.Errorf("%v: the second line is %q, want a pointer to handoff help", tt.args, lines[1])
		}
	}
	if _, err := os.Stat(crm); !os.IsNotExist(err) {
		t.Errorf("a usage error of deliver created %s", crm)
	}
}

// TestFlagErrorPrintedOnce checks that a flag error is one message, not the
// flag package's message and defaults followed by the command's own.
func TestFlagErrorPrintedOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"demo", "--json=maybe"}, `invalid boolean value "maybe" for -json`},
		{[]string{"approve", "--app"}, "flag needs an argument: -app"},
	} {
		_, _, stderr := runCLI(t, tt.args...)
		if strings.Count(stderr, tt.msg) != 1 || strings.Contains(stderr, "Usage") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%v: got stderr\n%s\nwant %q once, no defaults, and a pointer", tt.args, stderr, tt.msg)
		}
	}
}

// TestOperatorAndWorkUsageErrors: bad flag values are usage errors (exit
// 2), caught before any file is opened or created.
func TestOperatorAndWorkUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	work := []string{"work", "--app", "app.db", "--crm", "crm.db"}
	op := func(cmd string, args ...string) []string {
		return append([]string{cmd, "--app", "app.db"}, args...)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(work, "--workers", "0"), "--workers is 0, want 1 or more"},
		{append(work, "--max-attempts", "0"), "--max-attempts is 0, want 1 or more"},
		{append(work, "--lease", "-1s"), "--lease is -1s, want more than 0"},
		{append(work, "--lease", "0s"), "--lease is 0s, want more than 0"},
		{append(work, "--send-timeout", "30s"), "--send-timeout is 30s, want less than --lease (30s)"},
		{append(work, "--lease", "5s", "--send-timeout", "6s"), "--send-timeout is 6s, want less than --lease (5s)"},
		{append(work, "--max-age", "-1m"), "--max-age is -1m0s, want 0 (none) or more"},
		{append(work, "--backoff-base", "-1s"), "--backoff-base is -1s, want 0 (retry at once) or more"},
		{append(work, "--backoff-cap", "0s"), "--backoff-cap is 0s, want more than 0"},
		{append(work, "--log-format", "xml"), `--log-format is "xml", want text or json`},
		{append(work, "--worker", ""), "--worker is empty"},
		{append(work, "extra"), `unexpected argument "extra"`},
		{[]string{"work", "--app", "app.db"}, "missing --crm"},
		{op("requeue", "--reason", "r"), "missing KEY"},
		{op("requeue", "case-1", "case-2", "--reason", "r"), `unexpected argument "case-2"`},
		{op("requeue", "case-1"), "missing --reason"},
		{op("requeue", "case-1", "--reason", " "), "--reason is empty"},
		{op("requeue", "case-1", "--reason", "r", "--actor", "ann"), "flag provided but not defined: -actor"},
		{op("requeue", "case-1", "--reason", "r", "--retention", "-1h"), "--retention is -1h0m0s"},
		{op("reconcile", "case-1", "--reason", "r"), "give one of --remote-id N and --absent"},
		{op("reconcile", "case-1", "--reason", "r", "--remote-id", "3", "--absent"), "give one of --remote-id N and --absent"},
		{op("reconcile", "case-1", "--reason", "r", "--remote-id", "0"), "--remote-id is 0, want a task id of 1 or more"},
		{op("stale"), "missing --older-than"},
		{op("stale", "--older-than", "-1h"), "--older-than is -1h0m0s, want 0 or more"},
		{op("stale", "--older-than", "soon"), `--older-than is "soon", not a duration: write a number and a unit, h, m, s or ms, such as 30s, 90m, or 24h for a day`},
		{op("stale", "--older-than", "1d"), `--older-than is "1d", not a duration: write a number and a unit, h, m, s or ms, such as 30s, 90m, or 24h for a day`},
		{append(work, "--lease", "5"), `--lease is "5", not a duration`},
		{append(work, "--workers", "four"), `invalid value "four" for flag -workers: parse error`},
		{[]string{"crm", "serve", "--crm", "crm.db", "--retention", "-1s"}, "--retention is -1s, want 0 or more"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("usage errors left %v (%v) in the folder", entries, err)
	}
}

// TestMessagesNameTheCommandOnce: a message starts with the command (and
// its subcommand) once, not with the name of the package that made it.
func TestMessagesNameTheCommandOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crm := filepath.Join(dir, "crm.db")
	mustRun(t, "crm", "init", "--crm", crm)
	for _, tt := range []struct {
		args []string
		code int
		want string // the start of stderr
	}{
		{[]string{"crm", "nope", "--crm", crm}, 2, "handoff crm: unknown subcommand \"nope\"; want init or serve\nsee handoff help crm\n"},
		{[]string{"crm"}, 2, "handoff crm: want handoff crm init --crm PATH, or handoff crm serve --crm PATH\n"},
		{[]string{"crm", "serve", "--bogus"}, 2, "handoff crm serve: flag provided but not defined: -bogus\nsee handoff help crm\n"},
		{[]string{"crm", "init", "--crm"}, 2, "handoff crm init: flag needs an argument: -crm\n"},
		{[]string{"crm", "init", "--crm", crm}, 1, "handoff crm init: " + crm + " already exists; crm init creates a new CRM database only\n"},
		{[]string{"crm", "serve", "--crm", filepath.Join(dir, "missing.db")}, 1, "handoff crm serve: the CRM database "},
		{[]string{"check-receiver", closedPort(t)}, 1, "handoff check-receiver: nothing answers at the receiver's URL: "},
	} {
		if code, _, stderr := runCLI(t, tt.args...); code != tt.code || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want %d and %q first", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestHarnessCommandsAreHandoffSims: the harness's commands are not the
// product's, and asking the product for one says where they are.
func TestHarnessCommandsAreHandoffSims(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"explore", "designs", "enumerate", "replay", "report"} {
		code, stdout, stderr := runCLI(t, name, "--help")
		if code != 2 || stdout != "" || !strings.Contains(stderr, `unknown command "`+name+`"`) || !strings.Contains(stderr, "are handoff-sim's (go run ./cmd/handoff-sim help)") {
			t.Errorf("handoff %s: got exit %d, stdout %q, stderr %q; want 2 and a pointer to handoff-sim", name, code, stdout, stderr)
		}
	}
}
