package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestBackendFlagsRefused checks that explore and replay refuse an
// unknown backend and a server URL that is not PostgreSQL's, as usage
// errors.
func TestBackendFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "--backend", "mysql"},
		{"explore", "--backend", "postgres", "--postgres-url", "mysql://127.0.0.1/test"},
		{"replay", "--backend", "Postgres"},
		{"replay", "--backend", "postgres", "--postgres-url", "/tmp/app.db"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, "--") {
			t.Errorf("%v: got exit %d and stderr %q, want 2 and a message naming the flag", args, code, stderr)
		}
	}
}

// TestReplaySkipsTheOtherBackend replays, on each backend, a corpus file
// and one of a fault the backend lacks: that one is skipped, named on
// stderr with its reason, and the replay passes.
func TestReplaySkipsTheOtherBackend(t *testing.T) {
	server := pgtest.URL(t)
	for _, tt := range []struct {
		args    []string
		skipped string
		reason  string
	}{
		{[]string{"replay", "--quiet"}, "../../corpus/commit-lost.txt", "runs on postgres only"},
		{[]string{"replay", "--quiet", "--backend", "postgres", "--postgres-url", server}, "../../corpus/app-full.txt", "runs on sqlite only"},
	} {
		code, stdout, stderr := runCLI(t, append(tt.args, "../../corpus/approve-twice.txt", tt.skipped)...)
		if code != 0 || !strings.Contains(stderr, "skipped "+tt.skipped+":") || !strings.Contains(stderr, tt.reason) ||
			!strings.Contains(stdout, "every output matches; skipped 1 not applicable") {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 0 and %s skipped: %s", tt.args, code, stdout, stderr, tt.skipped, tt.reason)
		}
	}
}

// TestEnvironmentFailureExitsFour: when the server takes no connection,
// the commands that run the harness (explore, replay, report, designs)
// end with exit status 4 and say so,
// never as a counterexample nor as a failure of the harness: a server
// that is full from the start (waited for, for --connect-wait), one that
// fills up once the run has started (explore says how many connections
// it needs), and one that is not running.
func TestEnvironmentFailureExitsFour(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, url, says string
		waits           time.Duration
		started         bool // the run started before the server refused it
	}{
		{"full from the start", pgtest.LimitedServer(t, 0), "too many connections", 300 * time.Millisecond, false},
		{"full once the run started", pgtest.LimitedServer(t, 2), "too many connections", 0, true},
		{"not running", "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "connection refused", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"explore", "--checks", "5", "--seed", "1", "--parallel", "1", "--dir", t.TempDir()},
				{"replay", "--quiet"},
				{"report", "--out", filepath.Join(t.TempDir(), "report.html"), "../../corpus/lost-reply-demo.txt"},
				{"designs", "--measure", "1"},
			} {
				if args[0] == "report" && c.started {
					continue // one short file: it runs within two connections
				}
				start := time.Now()
				code, stdout, stderr := runCLI(t, append(args, "--backend", "postgres", "--postgres-url", c.url, "--connect-wait", "300ms")...)
				t.Logf("%s: %s", args[0], stderr)
				took := time.Since(start)
				if code != 4 || !strings.Contains(stderr, c.says) || strings.Contains(stdout+stderr, "invariant") || strings.Contains(stdout+stderr, "flaky") {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 4 and %q, no invariant, no flaky test", args[0], code, stdout, stderr, c.says)
				}
				if took < c.waits {
					t.Errorf("%s: ended after %v, before --connect-wait 300ms passed", args[0], took)
				}
				// A run that got as far as starting says what it needs,
				// at its start and again in its message.
				// One that did not start says it in its message.
				budget := fmt.Sprintf("this run holds at most %d connections", backend.PostgresConnections)
				if args[0] == "explore" && c.started && strings.Count(stderr, budget) != 2 {
					t.Errorf("explore: stderr %q; want %q at the start and in the message", stderr, budget)
				}
				if !c.started && strings.Count(stderr, budget) != 1 {
					t.Errorf("%s: stderr %q; want %q in the message", args[0], stderr, budget)
				}
			}
		})
	}
}

// TestUnreachableServer: a server that does not answer ends a command
// that runs the harness on one line that says why, without the password,
// with exit status 4: the environment failed, not the design.
func TestUnreachableServer(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "--backend", "postgres", "--postgres-url", "postgres://u:s3cret@127.0.0.1:1/test", "--checks", "1"},
		{"replay", "--quiet", "--backend", "postgres", "--postgres-url", "postgres://u:s3cret@127.0.0.1:1/test"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 4 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "cannot connect to") ||
			!strings.Contains(stderr, "connection refused") || strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 4 and one line saying why, without the password", args, code, stdout, stderr)
		}
	}
}
