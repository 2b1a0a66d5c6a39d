package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/cli/clitest"
	_ "modernc.org/sqlite"
)

// TestMain, and the helpers the tests of every command share: running
// the command line, reading and copying files.

// TestMain lets a test run the command line in a process of its own (as
// another user, say): with HANDOFF_RUN_MAIN set, the test binary is the
// handoff command.
func TestMain(m *testing.M) {
	if os.Getenv("HANDOFF_RUN_MAIN") != "" {
		main()
	}
	os.Exit(m.Run())
}

// runCLI runs the command line in-process and returns its exit status,
// stdout and stderr.
func runCLI(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return clitest.InProcess(t, "handoff", run, args...)
}

// readFiles returns the content of every file in paths.
func readFiles(t *testing.T, paths ...string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = b
	}
	return m
}

// equalFiles reports whether a and b hold the same files with the same
// content.
func equalFiles(a, b map[string][]byte) bool {
	for p := range a {
		if !bytes.Equal(a[p], b[p]) {
			return false
		}
	}
	return len(a) == len(b)
}

// folder returns every file in dir with its content (see
// clitest.Folder).
func folder(t *testing.T, dir string) map[string]string { return clitest.Folder(t, dir) }

// mustRun runs the command line and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s%s", args, code, stdout, stderr)
	}
	return stdout
}

// refused runs the command line and fails the test unless it exits 1
// with a message on stderr that contains want.
func refused(t *testing.T, want string, args ...string) {
	t.Helper()
	refusedWith(t, 1, want, args...)
}

// refusedWith runs args and fails t unless they exit with code and say
// want.
func refusedWith(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	got, stdout, stderr := runCLI(t, args...)
	if got != code || !strings.Contains(stdout+stderr, want) {
		t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d and %q", args, got, stdout, stderr, code, want)
	}
}

// inOldFiles makes a new folder the working directory, holding
// old-app.db and old-crm.db: files the first release wrote (see
// system/testdata), whose app delivered before identities existed.
func inOldFiles(t *testing.T) (dir string) {
	t.Helper()
	testdata, err := filepath.Abs("../../system/testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	t.Chdir(dir)
	copyTo(t, filepath.Join(testdata, "app-v0.db"), "old-app.db")
	copyTo(t, filepath.Join(testdata, "crm-v0.db"), "old-crm.db")
	return dir
}

// copyTo copies the file from to the file to.
func copyTo(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
