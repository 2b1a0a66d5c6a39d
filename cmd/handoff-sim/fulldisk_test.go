package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/notrun"
)

// TestFullDiskExitsFour: when the disk under the run's folder fills, at
// whatever point of the run, the commands that run the harness end with
// exit status 4 and say the disk is full, never as an invariant broken
// nor as a failure of the harness. Each runs in a child process with its
// folders on a tmpfs of a few KiB to a MiB, mounted in a mount namespace
// of its own; where that cannot be done (not root, no unshare), the test
// says so and skips (see notrun.Skip).
func TestFullDiskExitsFour(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: eight processes on full disks; run without -short")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		notrun.Skip(t, "the full-disk test did not run: no unshare, and a full disk needs a tmpfs of its own")
	}
	mounted := func(size, dir string, args ...string) *exec.Cmd {
		script := `mount -t tmpfs -o size="$0" tmpfs "$1" && shift && exec "$@"`
		return exec.CommandContext(t.Context(), unshare, append([]string{"-m", "--propagation", "private", "sh", "-c", script, size, dir}, args...)...)
	}
	if out, err := mounted("16k", t.TempDir(), "true").CombinedOutput(); err != nil {
		notrun.Skip(t, fmt.Sprintf("the full-disk test did not run: no tmpfs in a mount namespace of its own (%v: %s)", err, bytes.TrimSpace(out)))
	}
	for _, size := range []string{"16k", "64k", "256k", "1m"} {
		for _, command := range [][]string{
			{"explore", "--checks", "100", "--seed", "1", "--parallel", "1", "--dir"},
			{"replay", "--quiet"},
		} {
			dir := t.TempDir()
			args := command
			if command[0] == "explore" {
				args = append(slices.Clone(command), dir)
			}
			cmd := mounted(size, dir, append([]string{os.Args[0]}, args...)...)
			cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1", "TMPDIR="+dir)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if code != 4 || !strings.Contains(stderr.String(), "database or disk is full") || strings.Contains(stdout.String()+stderr.String(), "violation:") ||
				strings.Contains(stderr.String(), "flaky") {
				t.Errorf("%s on a full disk of %s: exit %d (%v), stdout %q, stderr %q; want 4, the disk full, no invariant broken",
					command[0], size, code, err, lastLines(stdout.String(), 3), lastLines(stderr.String(), 3))
			}
		}
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
