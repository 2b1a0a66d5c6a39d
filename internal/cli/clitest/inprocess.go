package clitest

import (
	"bytes"
	"context"
	"errors"
	"io"
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
