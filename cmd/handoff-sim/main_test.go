package main

import (
	"os"
	"testing"

	"github.com/outboxlab/handoff/internal/cli/clitest"
	_ "modernc.org/sqlite"
)

// TestMain, and the helpers the tests of every command share: running
// the command line, reading files.

// TestMain lets a test run the command line in a process of its own:
// with HANDOFF_RUN_MAIN set, the test binary is the handoff-sim command.
// It is the lane command too, as explore --parallel N starts it from its
// own executable: the test binary, under go test.
func TestMain(m *testing.M) {
	if os.Getenv("HANDOFF_RUN_MAIN") != "" || len(os.Args) > 1 && laneCommands[os.Args[1]] != nil {
		main()
	}
	os.Exit(m.Run())
}

// runCLI runs the command line in-process and returns its exit status,
// stdout and stderr.
func runCLI(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return clitest.InProcess(t, "handoff-sim", run, args...)
}

// mustRun runs the command line and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s%s", args, code, stdout, stderr)
	}
	return stdout
}

// folder returns every file in dir with its content (see
// clitest.Folder).
func folder(t *testing.T, dir string) map[string]string { return clitest.Folder(t, dir) }
