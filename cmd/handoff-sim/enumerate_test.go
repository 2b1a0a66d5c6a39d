package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// enumerate: crash points of the corpus's scenarios.

// TestEnumerate crashes the embedded corpus at every fault point through
// the CLI; with -short, one scenario file (internal/sim's
// TestCrashPointEnumeration crashes the whole corpus either way).
func TestEnumerate(t *testing.T) {
	t.Parallel()
	args := []string{"enumerate"}
	if testing.Short() {
		args = append(args, filepath.Join("..", "..", "corpus", "crash-after-reply.txt"))
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, " 0 failed") {
		t.Errorf("%s: exit %d:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
}

func TestEnumerateSkipsFragileScenarios(t *testing.T) {
	fragile := filepath.Join("..", "..", "corpus", "fragile", "two-writes.txt")
	real := filepath.Join("..", "..", "corpus", "duplicate-request.txt")
	code, stdout, stderr := runCLI(t, "enumerate", fragile)
	if code != 1 || !strings.Contains(stderr, "skipped "+fragile+": a scenario of the fragile design two-writes") ||
		!strings.Contains(stderr, "handoff-sim enumerate: nothing to enumerate") || stdout != "" {
		t.Errorf("enumerate of a fragile scenario: got exit %d, stdout %q, stderr %q; want 1, the skip and nothing to enumerate", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "enumerate", fragile, real)
	if code != 0 || !strings.Contains(stderr, "skipped "+fragile) || !strings.Contains(stdout, "enumerated 3 crash points in 1 scenario: 3 passed, 0 failed") ||
		!strings.Contains(stdout, "; skipped 1 scenario of fragile designs\n") {
		t.Errorf("enumerate of a fragile and a real scenario: got exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
