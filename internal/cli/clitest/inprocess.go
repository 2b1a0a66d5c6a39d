package clitest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Timeout bounds a command a test runs in-process: one that never ends
// (a worker that never finds the outbox idle) is interrupted and fails
// its test, instead of holding the package until go test's own timeout.
const Timeout = 2 * time.Minute

// InProcess runs the command line of the program called name in-process,
// through its run function, and returns its exit status, stdout and
// stderr.
func InProcess(t testing.TB, name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("%s %s: still running after %v, interrupted", name, strings.Join(args, " "), Timeout)
	}
	return code, stdout.String(), stderr.String()
}

// Folder returns every file in dir with its content: what a test
// compares before and after a command that must leave the files as they
// were.
func Folder(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// FlagLine is the line of a command's help that describes --flag, or ""
// when there is none.
func FlagLine(help, flag string) string {
	line := ""
	for _, l := range strings.Split(help, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--"+flag+" ") {
			line = l
		}
	}
	return line
}
