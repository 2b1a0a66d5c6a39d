// Package pgtest gives a test a PostgreSQL app database of its own: a new
// schema on the server that HANDOFF_POSTGRES_URL names or, when it is
// unset, on this machine's (postgres://postgres@127.0.0.1:5432/test?sslmode=disable),
// dropped when the test ends. Without a server the test is skipped and
// Reason says why, in one line, which go test shows without -v (see
// internal/notrun); CI sets the URL, so that there a missing server fails
// instead. With -short and the variable unset, the suite is
// skipped too: the quick suite is SQLite's.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/notrun"
	"github.com/outboxlab/handoff/system"
)

// Env names the variable that gives the server's URL; "off" skips the
// PostgreSQL suite.
const Env = "HANDOFF_POSTGRES_URL"

// localURL is the server a machine set up for handoff's tests runs, as
// handoff.LocalPostgres names it (which this package cannot import):
// without TLS, which on loopback protects nothing and costs a handshake
// at every new connection.
const localURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var (
	probeOnce      sync.Once
	server, reason string
	explicit       bool
	schemas        atomic.Int64
)

// probe finds the server once per test binary.
func probe() {
	url := os.Getenv(Env)
	explicit = url != "" && url != "off"
	switch url {
	case "off":
		reason = fmt.Sprintf("the PostgreSQL suite did not run: %s=off", Env)
		return
	case "":
		if testing.Short() {
			reason = fmt.Sprintf("the PostgreSQL suite did not run: -short leaves it out; set %s=postgres://… to run it", Env)
			return
		}
		url = localURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := system.PingPostgres(ctx, url, time.Second); err != nil {
		reason = fmt.Sprintf("the PostgreSQL suite did not run (%v); set %s=postgres://… to run it", err, Env)
		return
	}
	server = url
	fmt.Fprintf(os.Stderr, "the PostgreSQL suite runs on %s, %d tests at a time in this package; %s=off turns it off\n", system.Redact(url), parallel, Env)
}

// parallel is how many tests of one test binary use the server at once:
// each holds a few connections (an Env holds backend.PostgresConnections at
// most), and a shared server has a hundred by default for everyone.
const parallel = 2

// slots holds a place for each top-level test that uses the server
// now; held names the tests that hold one.
var (
	slots  = make(chan struct{}, parallel)
	heldMu sync.Mutex
	held   = map[string]bool{}
)

// take waits for a place for t's top-level test among the tests that use
// the server, unless it holds one, and gives it back when t ends. A
// subtest shares its test's place, so that a test waiting for its
// subtests never waits for a place it holds itself.
func take(t testing.TB) {
	top, _, _ := strings.Cut(t.Name(), "/")
	heldMu.Lock()
	mine := !held[top]
	held[top] = true
	heldMu.Unlock()
	if !mine {
		return
	}
	slots <- struct{}{}
	t.Cleanup(func() {
		heldMu.Lock()
		delete(held, top)
		heldMu.Unlock()
		<-slots
	})
}

// Reason says why the PostgreSQL suite does not run, or "" when it does.
func Reason() string {
	probeOnce.Do(probe)
	return reason
}

// Server returns the server's URL, for a test that makes its schemas
// itself. It skips t when no server runs, and fails it when
// HANDOFF_POSTGRES_URL names one that does not answer.
func Server(t testing.TB) string {
	t.Helper()
	if Reason() != "" {
		if explicit {
			t.Fatal(reason)
		}
		notrun.Skip(t, reason)
	}
	take(t)
	return server
}

// URL returns the URL of a new, empty schema for t, dropped when t ends,
// on Server's server.
func URL(t testing.TB) string {
	t.Helper()
	Server(t)
	sep := "?"
	if strings.Contains(server, "?") {
		sep = "&"
	}
	schema := fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1))
	drop(t, schema)
	t.Cleanup(func() { drop(t, schema) })
	return server + sep + "schema=" + schema
}

// drop drops schema and everything in it, if it is there.
func drop(t testing.TB, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
		t.Fatal(err)
	}
}

// Conn returns a connection of t's own to Server's server, closed when t
// ends, for a test that reads or changes a schema behind the system's
// back.
func Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, Server(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// Schema returns the schema a URL of URL names.
func Schema(t testing.TB, url string) string {
	t.Helper()
	_, schema, ok := strings.Cut(url, "schema=")
	if !ok {
		t.Fatalf("%s names no schema", url)
	}
	return schema
}

// aclLock names the lock under which roles are granted and dropped: two
// suites at once on one server that change the database's privileges
// together fail with "tuple concurrently updated".
const aclLock = `SELECT pg_advisory_xact_lock(hashtextextended('handoff_pgtest_acl', 0))`

// aclLocked runs statements in one transaction on conn, under aclLock.
func aclLocked(ctx context.Context, conn *pgx.Conn, statements ...string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for _, sql := range append([]string{aclLock}, statements...) {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// LimitedServer returns the URL of Server's server as a role of t's own
// that may hold at most limit connections at once (the server refuses
// more with SQLSTATE 53300, as a full server does), may make schemas in
// the database, and is dropped, with what it owns, when t ends: a full
// server for one test, without filling the one the other tests share.
func LimitedServer(t testing.TB, limit int) string {
	t.Helper()
	conn := Conn(t)
	ctx := context.Background()
	role := fmt.Sprintf("handoff_limited_%d_%d", os.Getpid(), schemas.Add(1))
	var database string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	if err := aclLocked(ctx, conn,
		fmt.Sprintf(`CREATE ROLE %s LOGIN NOSUPERUSER CONNECTION LIMIT %d`, role, limit),
		fmt.Sprintf(`GRANT CREATE ON DATABASE %s TO %s`, pgx.Identifier{database}.Sanitize(), role),
	); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The role's sessions end first: a test that failed may leave one.
		if err := aclLocked(ctx, conn,
			`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '`+role+`'`,
			`DROP OWNED BY `+role+` CASCADE`,
			`DROP ROLE `+role,
		); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// Connect connects to the app database url names (a running design's
// Process.Database: a URL whose schema parameter is the run's) through
// dial, with the schema on its search_path, as a library given a pgx
// configuration does. It returns the schema too, which it does not make.
func Connect(ctx context.Context, url string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*pgx.Conn, string, error) {
	connect, schema, err := system.SplitPostgres(url)
	if err != nil {
		return nil, "", err
	}
	cfg, err := pgx.ParseConfig(connect)
	if err != nil {
		return nil, "", err
	}
	cfg.DialFunc = dial
	conn, err := pgx.ConnectConfig(ctx, cfg)
	return conn, schema, err
}

// Listen is what a library that waits for notifications does: it
// connects to the database url names through dial, runs LISTEN, and
// waits in a goroutine of its own for a notification that never comes,
// until the connection is cut. done is closed when that goroutine ends.
// The running mode's tests stall their runs with it.
func Listen(ctx context.Context, url string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (done <-chan struct{}, err error) {
	conn, _, err := Connect(ctx, url, dial)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN jobs"); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		conn.WaitForNotification(ctx) // returns once the connection is cut
	}()
	return ended, nil
}
