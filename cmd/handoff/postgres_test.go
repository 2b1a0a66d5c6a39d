package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/system"
)

// TestCommandsRefuseAnEmptySchema: a URL whose schema holds no app
// database is refused by every command that needs one, as a missing file
// is, and nothing is created for it. (TestApproveDeliverInspect runs the
// commands on a schema that holds one.)
func TestCommandsRefuseAnEmptySchema(t *testing.T) {
	missing := pgtest.URL(t)
	crm := filepath.Join(t.TempDir(), "crm.db")
	for _, args := range [][]string{
		{"deliver", "--app", missing, "--crm", crm},
		{"work", "--app", missing, "--crm", crm, "--until-idle"},
		{"inspect", "--app", missing},
		{"check", "--app", missing},
		{"stale", "--app", missing, "--older-than", "1h"},
		{"requeue", "harbor:create-followup:v1:case-104", "--app", missing, "--reason", "r"},
		{"reconcile", "harbor:create-followup:v1:case-104", "--app", missing, "--absent", "--reason", "r"},
		{"upgrade", "--app", missing},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "holds no handoff app database") {
			t.Errorf("%v: got exit %d and stderr %q, want 1 and 'holds no handoff app database'", args, code, stderr)
		}
	}
	if _, err := system.OpenReadOnly(t.Context(), missing); !errors.Is(err, system.ErrNotFound) {
		t.Errorf("after the refused commands, opening %s: got %v, want ErrNotFound", missing, err)
	}
}

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

// TestUnreachableServer: an app database on a server that does not
// answer is refused on one line that says why, without the password:
// exit status 1 from a command on real files, 4 (the environment failed)
// from one that runs the harness.
func TestUnreachableServer(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"inspect", "--app", "postgres://u:s3cret@127.0.0.1:1/test?schema=x"}, 1},
		{[]string{"approve", "--app", "postgres://u:s3cret@127.0.0.1:1/test?schema=x", "--case", "c-1", "--title", "t"}, 1},
		{[]string{"explore", "--backend", "postgres", "--postgres-url", "postgres://u:s3cret@127.0.0.1:1/test", "--checks", "1"}, 4},
	} {
		args := tt.args
		code, stdout, stderr := runCLI(t, args...)
		if code != tt.code || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "cannot connect to") ||
			!strings.Contains(stderr, "connection refused") || strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d and one line saying why, without the password", args, code, stdout, stderr, tt.code)
		}
	}
}

// TestUpgradeMigratesAPostgresSchema: upgrade brings a schema an older
// handoff made (version 1: the title TEXT, no index of the blocked rows,
// no history) to this one's, as a writing command would, and its rows
// keep their titles.
func TestUpgradeMigratesAPostgresSchema(t *testing.T) {
	app := pgtest.URL(t)
	if code, _, stderr := runCLI(t, "approve", "--app", app, "--case", "case-104", "--title", `Call "back" \ now`); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	conn := pgtest.Conn(t)
	schema := pgtest.Schema(t, app)
	for _, stmt := range []string{ // back to version 1, as an older handoff left it
		"ALTER TABLE " + schema + ".approvals ALTER COLUMN title TYPE TEXT USING convert_from(title, 'UTF8')",
		"DROP INDEX " + schema + ".outbox_blocked",
		"DROP TABLE " + schema + ".history",
		"UPDATE " + schema + ".handoff_version SET version = 1",
	} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if code, stdout, stderr := runCLI(t, "upgrade", "--app", app); code != 0 || !strings.Contains(stdout, "up to date") {
		t.Fatalf("upgrade: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var version int
	var column string
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+schema+".handoff_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'approvals' AND column_name = 'title'", schema).Scan(&column); err != nil {
		t.Fatal(err)
	}
	var indexed bool
	if err := conn.QueryRow(t.Context(), "SELECT count(*) = 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'outbox_blocked'", schema).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if version != 4 || column != "bytea" || !indexed {
		t.Errorf("after upgrade: version %d, title %s, blocked rows indexed %v; want 4, bytea, indexed", version, column, indexed)
	}
	o, err := system.OpenReadOnly(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	snap, err := o.Snapshot(t.Context())
	if err != nil || len(snap.Approvals) != 1 || snap.Approvals[0].Title != `Call "back" \ now` {
		t.Errorf("after upgrade: %+v, %v; want the approval with its title", snap.Approvals, err)
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
				budget := fmt.Sprintf("this run holds at most %d connections", sim.PostgresConnections)
				if args[0] == "explore" && c.started && strings.Count(stderr, budget) != 2 {
					t.Errorf("explore: stderr %q; want %q at the start and in the message", stderr, budget)
				}
			}
		})
	}
}
