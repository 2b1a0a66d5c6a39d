package handoff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestMain says in one line, on the standard error, when the PostgreSQL
// suite did not run. go test shows it for a package that fails, and with
// -v; for a package that passes, go test ./... keeps it back (see README).
func TestMain(m *testing.M) {
	code := m.Run()
	if r := pgtest.Reason(); r != "" {
		fmt.Fprintf(os.Stderr, "handoff: %s\n", strings.Join(strings.Fields(r), " "))
	}
	os.Exit(code)
}

// TestCorpusOnPostgres replays every scenario file with the app database
// in PostgreSQL and compares each step's output with the file: the same
// output as on SQLite, since nothing a step prints names the backend. A
// file whose backend line names SQLite is skipped as not applicable; with
// -rewrite it writes back the outputs of the files that run on
// PostgreSQL only (TestCorpus writes the others). With -short it
// replays only the files of PostgreSQL alone.
// TestFragileCorpusOnPostgres replays the files of the fragile designs
// whose shortcut is in the outbox.
func TestCorpusOnPostgres(t *testing.T) {
	t.Parallel()
	server := pgtest.URL(t)
	scenarios, err := CorpusScenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		if d, err := designs.Lookup(sc.Design()); err == nil && d.Name != designs.Handoff.Name && !d.OwnReceiver {
			continue
		}
		if testing.Short() && sc.Backend() != Postgres {
			continue // TestCorpus replays it on SQLite
		}
		t.Run(strings.TrimSuffix(strings.TrimPrefix(sc.Name, "corpus/"), ".txt"), func(t *testing.T) {
			t.Parallel()
			outputs, problems, err := ReplayWith(t.Context(), sc, Config{Dir: t.TempDir(), Backend: Postgres, PostgresURL: server})
			if errors.Is(err, ErrOtherBackend) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if *rewrite && sc.Backend() == Postgres {
				if err := os.WriteFile(filepath.FromSlash(sc.Name), []byte(sc.Format(outputs)), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// postgresChecks is how many sequences TestSimulationOnPostgres runs (none
// under -short). A PostgreSQL step costs about ten SQLite ones.
const postgresChecks = 100

// TestSimulationOnPostgres is TestSimulation with the app database in
// PostgreSQL, on the sequences of an exploration with seed 1: the corpus shows each behaviour on it, and this that the
// Env renews its schema between sequences as it empties a file. It
// checks PostgreSQL's reach too: the lost commit, the lost reply to a
// commit and the busy app database take effect, and app-full, which needs a SQLite file, never
// does (drawn, it would fail its sequence as a malformed step).
func TestSimulationOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: TestCorpusOnPostgres replays PostgreSQL's own scenarios; run without -short to explore on PostgreSQL")
	}
	server := pgtest.URL(t)
	rec, stats := &Recorder{}, NewStats()
	prop, done := Property(t.Context(), PropertyConfig{Dir: t.TempDir(), MaxSteps: DefaultSteps, Recorder: rec, Stats: stats,
		Backend: Postgres, PostgresURL: server})
	defer done()
	for i := range postgresChecks {
		tb := &exploreTB{name: t.Name()}
		rapidFlags.check(tb, SequenceSeed(1, int64(i)), prop)
		if tb.failed {
			t.Fatalf("sequence %d:\n%s", i, strings.Join(tb.messages, "\n"))
		}
	}
	for _, k := range []faults.Kind{faults.CommitLost, faults.CommitReplyLost, faults.AppBusy} {
		if stats.Faults[k] == 0 {
			t.Errorf("fault %s never took effect on PostgreSQL", k)
		}
	}
	if n := stats.Faults[faults.AppFull]; n > 0 {
		t.Errorf("fault %s took effect %d times on PostgreSQL, want never", faults.AppFull, n)
	}
	t.Logf("faults %v", stats.Faults)
}

// TestFragileCorpusOnPostgres is TestFragileCorpus with the app
// database in PostgreSQL: every fragile design's minimal counterexample
// gives the same outputs there and breaks the same invariant. (The CRM is
// a SQLite file on either backend, so the designs whose shortcut is in
// the receiver run as on SQLite.)
func TestFragileCorpusOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: TestFragileCorpus replays every fragile design's counterexample on SQLite; run without -short to replay them on PostgreSQL too")
	}
	server := pgtest.URL(t)
	fragileCorpus(t, Config{Backend: Postgres, PostgresURL: server})
}

// TestVerifyOnPostgres verifies the real design with its app database in
// PostgreSQL, as a user's outbox on PostgreSQL would be verified: OpenApp
// gets the URL of a schema of the run's own, emptied between sequences.
// Like TestVerify it runs before the parallel tests: rapid reads its
// flags when a check starts, and explorations set them.
func TestVerifyOnPostgres(t *testing.T) {
	Verify(t, designs.Handoff, VerifyOptions{Steps: 5, Backend: Postgres, PostgresURL: pgtest.URL(t)})
}

// TestSchemasLeftBehindAreDropped: a schema whose process ended without
// dropping it (here its owning session ends, as when the process is
// killed) is dropped by the next newSchema on the server, and a schema
// still in use is kept, whichever process made it.
func TestSchemasLeftBehindAreDropped(t *testing.T) {
	server := pgtest.Server(t)
	t.Parallel()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exists := func(name string) bool {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	made := map[string]*pgSchema{}
	for _, role := range []string{"left", "live"} {
		s, err := newSchema(ctx, server)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `CREATE SCHEMA `+s.name); err != nil {
			t.Fatal(err)
		}
		made[role] = s
	}
	defer made["live"].close(ctx)
	left := made["left"]
	pid := left.owner.PgConn().PID()
	if err := left.owner.Close(ctx); err != nil { // as a killed process's session ends: its schema stays
		t.Fatal(err)
	}
	for ended := false; !ended; {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		ended = n == 0
	}
	next, err := newSchema(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer next.close(ctx)
	if exists(left.name) {
		t.Errorf("schema %s, whose session ended, was not dropped", left.name)
	}
	if !exists(made["live"].name) {
		t.Errorf("schema %s, still in use, was dropped", made["live"].name)
	}
}
