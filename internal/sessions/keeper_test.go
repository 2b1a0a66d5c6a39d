package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/sessions"
)

// connect connects to url through k, with the startup parameter
// application_name set to name.
func connect(t *testing.T, k *sessions.Keeper, url, name string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = k.Dial
	cfg.TLSConfig, cfg.Fallbacks = nil, nil
	cfg.RuntimeParams["application_name"] = name
	return pgx.ConnectConfig(t.Context(), cfg)
}

// keeper returns a Keeper of url's server, closed when t ends.
func keeper(t *testing.T, url string) *sessions.Keeper {
	t.Helper()
	k, err := sessions.New(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// session runs statements on a connection through k and closes it, in
// the way each case says, and returns the server process that served it.
func session(t *testing.T, k *sessions.Keeper, url, name string, statements ...string) int32 {
	t.Helper()
	c, err := connect(t, k, url, name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, sql := range statements {
		if _, err := c.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var pid int32
	if err := c.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// wantSessions fails t unless k made and reused as many sessions as
// want.
func wantSessions(t *testing.T, k *sessions.Keeper, made, reused int) {
	t.Helper()
	if m, r := k.Sessions(); m != made || r != reused {
		t.Errorf("the keeper made %d sessions and reused %d, want %d and %d", m, r, made, reused)
	}
}

func TestKeeperReusesASessionAsNew(t *testing.T) {
	schema := pgtest.Schema(t, pgtest.URL(t))
	url := pgtest.Server(t)
	direct := pgtest.Conn(t)
	ctx := t.Context()
	table := schema + ".keeper"
	if _, err := direct.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	k := keeper(t, url)

	// A client leaves with a transaction open, a prepared statement, a
	// changed setting and a session advisory lock.
	first := session(t, k, url, "worker A",
		"PREPARE kept AS SELECT 1",
		"SET lock_timeout = 1234",
		"SET plan_cache_mode = force_custom_plan",
		"SELECT pg_advisory_lock(42)",
		"BEGIN",
		"INSERT INTO "+table+" VALUES (1)",
	)
	// What it left is gone as the connection closed.
	var rows int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	var locked bool
	if err := direct.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&locked); err != nil {
		t.Fatal(err)
	}
	direct.Exec(ctx, "SELECT pg_advisory_unlock(42)")
	if rows != 0 || !locked {
		t.Errorf("after the client left, the table holds %d rows (want 0) and the advisory lock was free: %v (want true)", rows, locked)
	}

	// The next client of the same parameters gets the same session, as
	// new: the statement name is free, and the settings are those the
	// session began with.
	c, err := connect(t, k, url, "worker A")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var pid int32
	var timeout, plans string
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid(), current_setting('lock_timeout'), current_setting('plan_cache_mode')").Scan(&pid, &timeout, &plans); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "PREPARE kept AS SELECT 2"); err != nil {
		t.Errorf("the next client could not prepare a name the last one used: %v", err)
	}
	if pid != first || timeout == "1234ms" {
		t.Errorf("the next client got process %d with lock_timeout %s, want process %d with the server's lock_timeout", pid, timeout, first)
	}
	if plans != "force_generic_plan" {
		t.Errorf("the next client's plan_cache_mode is %s, want force_generic_plan, the Keeper's", plans)
	}
	wantSessions(t, k, 1, 1)
}

func TestKeeperKeepsSessionsApartByStartupParameters(t *testing.T) {
	url := pgtest.Server(t)
	k := keeper(t, url)
	a := session(t, k, url, "worker A")
	b := session(t, k, url, "worker B")
	again := session(t, k, url, "worker A")
	if a == b || again != a {
		t.Errorf("worker A, B and A again were served by processes %d, %d and %d: want A's own, B's own, A's again", a, b, again)
	}
	wantSessions(t, k, 2, 1)
}

func TestKeeperFinishesWhatTheClientSentBeforeReuse(t *testing.T) {
	url := pgtest.Server(t)
	k := keeper(t, url)
	c, err := connect(t, k, url, "worker A")
	if err != nil {
		t.Fatal(err)
	}
	// The client begins a transaction, sends a slow query and leaves
	// without reading its answer.
	c.PgConn().Exec(t.Context(), "BEGIN; SELECT pg_sleep(0.2)")
	c.PgConn().Conn().Close()
	c.Close(context.Background())

	d, err := connect(t, k, url, "worker A")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if _, err := d.PgConn().Exec(t.Context(), "SELECT 1").ReadAll(); err != nil {
		t.Fatalf("the next client could not query on the session: %v", err)
	}
	if status := d.PgConn().TxStatus(); status != 'I' {
		t.Errorf("after a statement of its own the next client's session is in state %q, want 'I': in the transaction the last client left open", status)
	}
	wantSessions(t, k, 1, 1)
}

func TestKeeperPassesTheServersRefusal(t *testing.T) {
	full := pgtest.LimitedServer(t, 0)
	k := keeper(t, full)
	_, err := connect(t, k, full, "worker A")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("connecting through the keeper to a full server: %v, want SQLSTATE 53300", err)
	}
	if made, _ := k.Sessions(); made != 0 {
		t.Errorf("the keeper counts %d sessions made on a full server", made)
	}
}

func TestKeeperReadWaitsForTheStartup(t *testing.T) {
	url := pgtest.Server(t)
	k := keeper(t, url)
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.Dial(t.Context(), "tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// pgx reads on a goroutine of its own while it writes its startup.
	read := make(chan string, 1)
	go func() {
		b := make([]byte, 1)
		n, err := c.Read(b)
		read <- fmt.Sprintf("%q %v", b[:n], err)
	}()
	time.Sleep(20 * time.Millisecond) // the read waits first
	startup := &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": cfg.User, "database": cfg.Database}}
	msg, err := startup.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != `"R" <nil>` {
		t.Errorf("a read begun before the startup got %s, want the first byte of AuthenticationOk", got)
	}
}

func TestKeeperReadsWhileAWriteWaits(t *testing.T) {
	url := pgtest.Server(t)
	k := keeper(t, url)
	c, err := connect(t, k, url, "worker A")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	// A batch larger than the sockets hold, each answer as large: the
	// server stops reading until the client reads, which pgx does on a
	// goroutine of its own while its write waits.
	const queries = 20
	padding := strings.Repeat("x", 2<<20)
	batch := &pgx.Batch{}
	for range queries {
		batch.Queue("SELECT $1::text || repeat('y', 2 << 20)", padding)
	}
	done := make(chan error, 1)
	go func() {
		results := c.SendBatch(t.Context(), batch)
		for range queries {
			var answer string
			if err := results.QueryRow().Scan(&answer); err != nil {
				done <- err
				return
			}
		}
		done <- results.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a batch larger than the sockets hold did not finish in a minute through the keeper")
	}
}
