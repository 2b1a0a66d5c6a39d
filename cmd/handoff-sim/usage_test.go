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
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	for _, args := range [][]string{
		{},
		{"launch"},
		{"approve", "--app", app, "--title", "t"}, // the product's command, not the harness's
		{"explore", "--checks", "many"},
		{"explore", "--design", "nonexistent"},
		{"explore", "--transport", "pigeon"},
		{"explore", "--transport", "http", "--design", "check-then-create"},
		{"replay", "--transport", "HTTP"},
		{"replay", "--report", dir},
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
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string // in the first line of stderr
	}{
		{[]string{"launch"}, 2, `unknown command "launch"`},
		{[]string{"help", "explore", "designs"}, 2, "help takes one command"},
		{[]string{"explore", "--checks", "0"}, 2, "--checks is 0, want 1 or more"},
		{[]string{"explore", "--checks", "-3"}, 2, "--checks is -3, want 1 or more"},
		{[]string{"explore", "--steps", "0"}, 2, "--steps is 0, want 1 or more"},
		{[]string{"explore", "--parallel", "0"}, 2, "--parallel is 0, want 1 or more"},
		{[]string{"explore", "--shard", "0/1"}, 2, `--shard is "0/1", want i/n with 1 <= i <= n`},
		{[]string{"explore", "--checks", "many"}, 2, `invalid value "many" for flag -checks`},
		{[]string{"explore", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"explore", "--design", "nope"}, 2, `unknown design "nope"`},
		{[]string{"designs", "nope"}, 2, `unknown design "nope"`},
		{[]string{"designs", "--measure", "0"}, 2, "--measure is 0, want 1 or more"},
		{[]string{"designs", "--measure", "-1"}, 2, "--measure is -1, want 1 or more"},
		{[]string{"designs", "--measure", "1", "two-writes"}, 2, "give no names"},
		{[]string{"designs", "--backend", "postgres"}, 2, "without --measure it has nothing to do"},
		{[]string{"designs", "--seed", "5"}, 2, "--seed is the first seed of --measure; without --measure it has nothing to do"},
		{[]string{"designs", "--backend", "postgres", "--postgres-url", "postgres://nobody@127.0.0.1:1/none"}, 2, "without --measure it has nothing to do"},
		{[]string{"designs", "--measure", "1", "--backend", "oracle"}, 2, `unknown backend "oracle"`},
		{[]string{"explore", "--dir", filepath.Join(dir, "missing")}, 2, "--dir " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"explore", "--dir", app}, 2, "--dir " + app + ": a file, not a folder"},
		{[]string{"explore", "--save", app}, 2, "--save " + app + ": a file, not a folder"},
		{[]string{"explore", "--report", dir}, 2, "--report " + dir + ": a folder, not a file"},
		{[]string{"replay", "--report", dir, "corpus/app-busy.txt"}, 2, "--report " + dir + ": a folder, not a file"},
		{[]string{"report", "--out", dir, "corpus/app-busy.txt"}, 2, "--out " + dir + ": a folder, not a file"},
		{[]string{"replay", filepath.Join(dir, "missing.txt")}, 2, "scenario file " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
		{[]string{"replay", dir}, 2, "scenario file " + dir + ": a folder, not a file"},
		{[]string{"report", filepath.Join(dir, "missing.txt")}, 2, "scenario file " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
		{[]string{"replay", "postgres:/h/scenario.txt"}, 2, `"postgres:/h/scenario.txt" looks like a mistyped URL`},
		{[]string{"explore", "--save", "postgres//h/db"}, 2, `--save "postgres//h/db" looks like a mistyped URL`},
		{[]string{"explore", "--report", "http:/x"}, 2, `--report "http:/x" looks like a mistyped URL`},
		{[]string{"replay", "--backend", "postgres", "--postgres-url", "postgres:/h/db"}, 2, `--postgres-url "postgres:/h/db" is not a PostgreSQL URL (postgres://…); it looks like a mistyped URL`},
		{[]string{"designs", "two-writes"}, 0, ""},
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
		if tt.code == 2 && !strings.HasPrefix(lines[1], "see handoff-sim help") {
			t.Errorf("%v: the second line is %q, want a pointer to handoff-sim help", tt.args, lines[1])
		}
	}
}

// TestFlagErrorPrintedOnce checks that a flag error is one message, not the
// flag package's message and defaults followed by the command's own.
func TestFlagErrorPrintedOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"explore", "--checks", "many"}, `invalid value "many" for flag -checks`},
		{[]string{"replay", "--loud"}, "flag provided but not defined: -loud"},
	} {
		_, _, stderr := runCLI(t, tt.args...)
		if strings.Count(stderr, tt.msg) != 1 || strings.Contains(stderr, "Usage") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%v: got stderr\n%s\nwant %q once, no defaults, and a pointer", tt.args, stderr, tt.msg)
		}
	}
}

// TestMessagesNameTheCommandOnce: a message starts with the command (and
// its subcommand) once, not with the name of the package that made it.
func TestMessagesNameTheCommandOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string // the start of stderr
	}{
		{[]string{"designs", "nope"}, 2, "handoff-sim designs: unknown design \"nope\" (see handoff-sim designs)\nsee handoff-sim help designs\n"},
		{[]string{"explore", "--design", "nope"}, 2, "handoff-sim explore: unknown design \"nope\" (see handoff-sim designs)\nsee handoff-sim help explore\n"},
	} {
		if code, _, stderr := runCLI(t, tt.args...); code != tt.code || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want %d and %q first", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestProductCommandsAreHandoffs: the product's commands are not the
// harness's, and asking the harness for one says where they are.
func TestProductCommandsAreHandoffs(t *testing.T) {
	for _, name := range []string{"approve", "deliver", "work", "crm", "trial", "version"} {
		code, stdout, stderr := runCLI(t, name, "--help")
		if code != 2 || stdout != "" || !strings.Contains(stderr, `unknown command "`+name+`"`) || !strings.Contains(stderr, "are handoff's (go run ./cmd/handoff help)") {
			t.Errorf("handoff-sim %s: got exit %d, stdout %q, stderr %q; want 2 and a pointer to handoff", name, code, stdout, stderr)
		}
	}
}
