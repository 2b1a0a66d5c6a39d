package system_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestPostgresOpen: Open creates an app database in an empty schema and
// opens it again; it refuses, writing nothing, what is not one.
func TestPostgresOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	if _, err := system.OpenReadOnly(ctx, url); !errors.Is(err, system.ErrNotFound) {
		t.Fatalf("read-only open of an empty schema: %v, want ErrNotFound", err)
	}
	app, err := system.Open(ctx, url, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(ctx, "case-1", title); err != nil {
		t.Fatal(err)
	}
	app.Close()
	again, err := system.OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if s, err := again.Snapshot(ctx); err != nil || len(s.Outbox) != 1 || s.Outbox[0].State != system.Pending {
		t.Fatalf("reopened: %+v, %v; want the one pending row", s, err)
	}
	if _, err := again.RecordApproval(ctx, "case-2", title); !errors.Is(err, system.ErrReadOnly) {
		t.Errorf("approving through a read-only handle: %v, want ErrReadOnly", err)
	}

	foreign := pgtest.URL(t)
	pgExec(t, foreign, `CREATE SCHEMA `+schemaOf(foreign)+`; CREATE TABLE `+schemaOf(foreign)+`.orders (id int)`)
	newer := pgtest.URL(t)
	created, err := system.Open(ctx, newer, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	created.Close()
	pgExec(t, newer, `UPDATE `+schemaOf(newer)+`.handoff_version SET version = 99`)
	unmade := map[int]string{} // schemas at a version no handoff made
	for _, v := range []int{0, -1} {
		unmade[v] = pgtest.URL(t)
		created, err := system.Open(ctx, unmade[v], system.Options{})
		if err != nil {
			t.Fatal(err)
		}
		created.Close()
		pgExec(t, unmade[v], fmt.Sprintf(`UPDATE %s.handoff_version SET version = %d`, schemaOf(unmade[v]), v))
	}
	for _, tt := range []struct {
		name, url string
		want      error
	}{
		{"another application's tables", foreign, system.ErrWrongDatabase},
		{"a newer handoff's schema", newer, system.ErrNewerSchema},
		{"a schema at version 0", unmade[0], system.ErrWrongDatabase},
		{"a schema at version -1", unmade[-1], system.ErrWrongDatabase},
		{"a schema name that needs quoting", strings.Replace(url, "schema=", "schema=Orders%3B", 1), system.ErrInvalidInput},
		{"a bare ';' in the parameters", strings.Replace(url, "schema=", "schema=nu;drop&x=", 1), system.ErrInvalidInput},
		{"two schemas", url + "&schema=other", system.ErrInvalidInput},
		{"a URL that does not parse", "postgres://%zz", system.ErrInvalidInput},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := system.Open(ctx, tt.url, system.Options{}); !errors.Is(err, tt.want) {
				t.Errorf("Open: %v, want %v", err, tt.want)
			}
			if errors.Is(tt.want, system.ErrInvalidInput) {
				return
			}
			if _, err := system.OpenReadOnly(ctx, tt.url); !errors.Is(err, tt.want) {
				t.Errorf("OpenReadOnly: %v, want %v", err, tt.want)
			}
		})
	}
	var tables []string
	rows := query(t, foreign, `SELECT table_name FROM information_schema.tables WHERE table_schema = '`+schemaOf(foreign)+`'`)
	for _, r := range rows {
		tables = append(tables, r[0])
	}
	if fmt.Sprint(tables) != "[orders]" {
		t.Errorf("the refused schema now holds %v, want only [orders]", tables)
	}
}

// schemaOf is the schema parameter of a pgtest URL.
func schemaOf(url string) string { return url[strings.LastIndex(url, "schema=")+len("schema="):] }

// pgExec runs sql on the server of url, outside any handoff handle.
func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	query(t, url, sql)
}

// serverConn is a pgx connection of the test's own to the tests'
// server, as an application's code would hold one; closed when the test
// ends.
func serverConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// query runs sql on the server of url and returns its rows as text.
func query(t *testing.T, url, sql string) [][]string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url[:strings.LastIndex(url, "schema=")-1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var r []string
		for _, v := range vals {
			r = append(r, fmt.Sprint(v))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// killer ends, from a connection of its own, the server connection of a
// worker's transaction that waits for its COMMIT, once armed: the
// connection dies during the commit, as when a network or the server
// fails then. It ends only a connection whose transaction holds a lock in
// the schema of its url, so that a test of another package on the same
// server, whose worker has the same name, keeps its connections.
type killer struct {
	t      *testing.T
	url    string
	worker string
	armed  bool
	killed int
}

func (k *killer) hook(p system.FaultPoint) error {
	if p != system.PointBeforeCommit || !k.armed {
		return nil
	}
	k.armed = false
	u, err := url.Parse(k.url)
	if err != nil {
		k.t.Fatal(err)
	}
	rows := query(k.t, k.url, `SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a
		WHERE a.application_name = 'handoff `+k.worker+`' AND a.state = 'idle in transaction'
		AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE l.pid = a.pid AND c.relnamespace = '`+u.Query().Get("schema")+`'::regnamespace)`)
	k.killed += len(rows)
	return nil
}

// TestCommitLost kills the connection of each kind of write while its
// COMMIT is due: the caller hears ErrCommitUnknown, nothing of the write
// is there, and the next write on the same Outbox goes through. A settle
// whose commit is unknown leaves its attempt counted, with the cause.
func TestCommitLost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tt := range []struct {
		name string
		// write is the write that dies; it may prepare what it needs
		// before it arms k.
		write func(t *testing.T, app *system.Outbox, crm *system.CRM, k *killer) error
		// after is the row of case-1 afterwards; zero Attempts means none.
		wantAttempts  int
		wantLastError string
	}{
		{"approve", func(t *testing.T, app *system.Outbox, _ *system.CRM, k *killer) error {
			k.armed = true
			_, err := app.RecordApproval(ctx, "case-1", title)
			return err
		}, -1, ""},
		{"claim", func(t *testing.T, app *system.Outbox, _ *system.CRM, k *killer) error {
			mustApprove(t, app, "case-1")
			k.armed = true
			_, _, err := app.ClaimNext(ctx, 0)
			return err
		}, 0, ""},
		{"settle", func(t *testing.T, app *system.Outbox, crm *system.CRM, k *killer) error {
			mustApprove(t, app, "case-1")
			c, _, err := app.ClaimNext(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			id, err := crm.CreateTask(ctx, c.Key, c.Payload)
			k.armed = true
			_, err = app.Settle(ctx, c, id, err)
			var ae *system.AttemptError
			if !errors.As(err, &ae) || ae.Attempt != 1 {
				t.Errorf("settle: %v, want an AttemptError for attempt 1", err)
			}
			return err
		}, 1, system.LastErrorLocalPrefix + "commit outcome unknown"},
		{"reconcile", func(t *testing.T, app *system.Outbox, _ *system.CRM, k *killer) error {
			mustApprove(t, app, "case-1")
			k.armed = true
			return app.ReconcileAbsent(ctx, mustKey(t, "case-1"), "person", "checked")
		}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := pgtest.URL(t)
			k := &killer{t: t, url: url, worker: "A"}
			app, crm, _ := openPair(t, backend{"postgres", func(testing.TB) string { return url }}, system.Options{Worker: "A", NoBackoff: true, Harness: system.Harness{Hook: k.hook}})
			if err := tt.write(t, app, crm, k); !errors.Is(err, system.ErrCommitUnknown) {
				t.Errorf("got %v, want ErrCommitUnknown", err)
			}
			if k.killed != 1 {
				t.Fatalf("killed %d connections, want the one of the transaction", k.killed)
			}
			r, err := app.Row(ctx, mustKey(t, "case-1"))
			switch {
			case tt.wantAttempts < 0 && !errors.Is(err, system.ErrNotFound):
				t.Errorf("after a lost approval: %+v, %v; want no row", r, err)
			case tt.wantAttempts >= 0 && (err != nil || r.Attempts != tt.wantAttempts || r.LastError != tt.wantLastError || r.Fence != int64(tt.wantAttempts)):
				t.Errorf("row %+v, %v; want %d attempts and fence, last error %q", r, err, tt.wantAttempts, tt.wantLastError)
			}
			audit, err := app.Audit(ctx)
			if err != nil || len(audit) != 0 {
				t.Errorf("audit %+v, %v; want nothing", audit, err)
			}
			mustApprove(t, app, "case-2")
			if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result == system.Idle {
				t.Errorf("the next delivery: %+v, %v; want one", d, err)
			}
		})
	}
}

func mustKey(t *testing.T, caseID string) string {
	t.Helper()
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		t.Fatal(err)
	}
	return a.Key
}

// TestRecordApprovalPgxJoinsTheCallersTransaction records approvals in
// pgx transactions on a connection of the caller's own, whose search path
// does not name the Outbox's schema, beside a business write: a rollback
// leaves neither, a commit both; a repeat changes nothing and another
// title is a conflict.
func TestRecordApprovalPgxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	app, _, _ := openPair(t, backend{"postgres", func(testing.TB) string { return url }}, system.Options{})
	schema := schemaOf(url)
	conn := serverConn(t)
	if _, err := conn.Exec(ctx, `CREATE TABLE `+schema+`.repairs (case_id TEXT PRIMARY KEY, plan TEXT)`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		caseID, title string
		commit        bool
		want          error
		wantRows      int
	}{
		{caseID, title, false, nil, 0},
		{caseID, title, true, nil, 1},
		{caseID, title, true, nil, 1},
		{caseID, "Call about something else", true, system.ErrKeyConflict, 1},
		{"case 105", title, true, system.ErrInvalidInput, 1},
	} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.repairs VALUES ($1, 'replace the pump') ON CONFLICT DO NOTHING`, tt.caseID); err != nil {
			t.Fatal(err)
		}
		_, err = app.RecordApprovalPgx(ctx, tx, tt.caseID, tt.title)
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("%s %q: got %v, want %v", tt.caseID, tt.title, err, tt.want)
		}
		if tt.commit && err == nil {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		s := snapshot(t, app)
		repairs := query(t, url, `SELECT case_id FROM `+schema+`.repairs`)
		if len(s.Approvals) != tt.wantRows || len(s.Outbox) != tt.wantRows || len(repairs) != tt.wantRows {
			t.Errorf("after %s %q: %d approvals, %d rows, %d repairs; want %d of each", tt.caseID, tt.title, len(s.Approvals), len(s.Outbox), len(repairs), tt.wantRows)
		}
	}
	sqliteApp, _, _ := openPair(t, sqliteBackend, system.Options{})
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := sqliteApp.RecordApprovalPgx(ctx, tx, caseID, title); !errors.Is(err, system.ErrInvalidInput) {
		t.Errorf("a pgx transaction for a SQLite outbox: %v, want ErrInvalidInput", err)
	}
}

// TestSchemasDoNotWaitForEachOther holds an approval of a case open in
// one schema (its transaction stopped between its inserts) and approves
// the same case in another schema of the same server: it must not wait
// for the first (the lock that serialises approvals of one key is the
// schema's), while a second approval in the first schema must, and so
// must one in a caller's pgx transaction (RecordApprovalPgx), which is
// then a harmless repeat, not a duplicate key.
func TestSchemasDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	first, second := pgtest.URL(t), pgtest.URL(t)
	inside, release := make(chan struct{}), make(chan struct{})
	holder, _, _ := openPair(t, backend{"postgres", func(testing.TB) string { return first }}, system.Options{Harness: system.Harness{Hook: func(p system.FaultPoint) error {
		if p == system.PointBetweenApprovalInserts {
			close(inside)
			<-release
		}
		return nil
	}}})
	held := make(chan error, 1)
	go func() {
		_, err := holder.RecordApproval(ctx, caseID, title)
		held <- err
	}()
	<-inside
	opts := system.Options{BusyTimeout: 50 * time.Millisecond}
	other, _, _ := openPair(t, backend{"postgres", func(testing.TB) string { return second }}, opts)
	if _, err := other.RecordApproval(ctx, caseID, title); err != nil {
		t.Errorf("approving in another schema: %v, want no wait", err)
	}
	same, _, _ := openPair(t, backend{"postgres", func(testing.TB) string { return first }}, opts)
	if _, err := same.RecordApproval(ctx, caseID, title); !errors.Is(err, system.ErrBusy) {
		t.Errorf("approving in the same schema while the first holds the case: %v, want ErrBusy", err)
	}
	tx, err := serverConn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	viaPgx := make(chan error, 1)
	go func() {
		_, err := same.RecordApprovalPgx(ctx, tx, caseID, title)
		viaPgx <- err
	}()
	time.Sleep(300 * time.Millisecond) // time for it to reach the case's lock
	close(release)
	if err := <-held; err != nil {
		t.Error(err)
	}
	if err := <-viaPgx; err != nil {
		t.Errorf("approving in a caller's pgx transaction while the first held the case: %v, want a harmless repeat", err)
	}
}

// TestDropPostgres drops the schema of an app database, and refuses
// one that holds something else.
func TestDropPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	app, err := system.Open(ctx, url, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	app.Close()
	if err := system.DropPostgres(ctx, url); err != nil {
		t.Fatal(err)
	}
	if n := query(t, url, `SELECT 1 FROM pg_namespace WHERE nspname = '`+schemaOf(url)+`'`); len(n) != 0 {
		t.Errorf("the schema is still there")
	}
	foreign := pgtest.URL(t)
	pgExec(t, foreign, `CREATE SCHEMA `+schemaOf(foreign)+`; CREATE TABLE `+schemaOf(foreign)+`.orders (id int)`)
	if err := system.DropPostgres(ctx, foreign); !errors.Is(err, system.ErrWrongDatabase) {
		t.Errorf("dropping another application's schema: %v, want ErrWrongDatabase", err)
	}
	if n := query(t, foreign, `SELECT 1 FROM pg_tables WHERE schemaname = '`+schemaOf(foreign)+`'`); len(n) != 1 {
		t.Errorf("the refused schema lost its table")
	}
}

// TestPasswordsStayHidden: a message about a PostgreSQL URL never shows
// its password, even one with a character a URL must encode, which the
// URL parser then reads as a port or a path.
func TestPasswordsStayHidden(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tt := range []struct{ url, want string }{
		{"postgres://alice:s3cret@127.0.0.1:1/app?schema=x", "postgres://alice:xxxxx@127.0.0.1:1/app?schema=x"},
		{"postgres://alice:s3cr/et@127.0.0.1:1/app", "postgres://…@127.0.0.1:1/app"},
		{"postgres://alice:2024/s3cret@127.0.0.1:1/app", "postgres://…@127.0.0.1:1/app"},
		{"postgres://alice:s3c?ret@127.0.0.1:1/app", "postgres://…@127.0.0.1:1/app"},
		{"postgres://127.0.0.1:1/app", "postgres://127.0.0.1:1/app"},
		{"postgres//alice:s3cret@127.0.0.1:1/app", "postgres//…@127.0.0.1:1/app"},
		{"postgres:/alice:s3cret@127.0.0.1:1/app", "postgres:/…@127.0.0.1:1/app"},
	} {
		if got := system.Redact(tt.url); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.url, got, tt.want)
		}
		_, err := system.Open(ctx, tt.url, system.Options{})
		if err == nil || strings.Contains(err.Error(), "s3c") || strings.Contains(err.Error(), "et@") || strings.Contains(err.Error(), "2024") {
			t.Errorf("Open(%q): %v; want an error without the password", tt.url, err)
		}
	}
}

// TestWrapConn: every connection an Outbox on PostgreSQL makes goes
// through Options.Harness.WrapConn, whose connection then carries the
// protocol: a wrapper that fails every write leaves the Outbox unable to
// open.
func TestWrapConn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	var wrapped atomic.Int64
	app, err := system.Open(ctx, url, system.Options{Harness: system.Harness{WrapConn: func(c net.Conn) net.Conn { wrapped.Add(1); return c }}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(ctx, "case-1", title); err != nil {
		t.Fatal(err)
	}
	app.Close()
	if wrapped.Load() == 0 {
		t.Errorf("no connection went through WrapConn")
	}
	broken := func(c net.Conn) net.Conn { return failingWrites{c} }
	if app, err := system.Open(ctx, url, system.Options{Harness: system.Harness{WrapConn: broken}}); err == nil {
		app.Close()
		t.Errorf("an Outbox whose connections cannot write opened")
	}
}

// failingWrites is a connection whose writes fail.
type failingWrites struct{ net.Conn }

func (failingWrites) Write([]byte) (int, error) { return 0, errors.New("writes fail") }

// TestClaimSkipsARowAnotherClaimHolds holds worker A's claim of case-1
// before its COMMIT and has worker B claim meanwhile, with a short busy
// timeout: B takes case-2 at once (FOR UPDATE … SKIP LOCKED) instead of
// waiting for A's row, and A's claim then commits case-1.
func TestClaimSkipsARowAnotherClaimHolds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	inside, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	a, err := system.Open(ctx, url, system.Options{Worker: "A", Harness: system.Harness{Hook: func(p system.FaultPoint) error {
		if p == system.PointBeforeCommit && armed.CompareAndSwap(true, false) {
			close(inside)
			<-release
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mustApprove(t, a, "case-1", "case-2")
	b, err := system.Open(ctx, url, system.Options{Worker: "B", BusyTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	armed.Store(true)
	held := make(chan claimResult, 1)
	go func() {
		var r claimResult
		r.c, r.d, r.err = a.ClaimNext(ctx, 0)
		held <- r
	}()
	<-inside
	c, d, err := b.ClaimNext(ctx, 0)
	close(release)
	if err != nil || d.Result != system.ResultPending || c.Key != mustKey(t, "case-2") {
		t.Errorf("B's claim while A's holds case-1: %+v %+v, %v; want case-2 at once", c, d, err)
	}
	if r := <-held; r.err != nil || r.c.Key != mustKey(t, "case-1") {
		t.Errorf("A's claim: %+v, %v; want case-1", r.c, r.err)
	}
}

// TestOpenWaitsForAFullServer: a server with no connection to spare
// (SQLSTATE 53300) is waited for, with backoff, for Options.ConnectWait:
// Open succeeds once a connection is freed within it, and returns
// ErrUnavailable, having written nothing, when none is.
func TestOpenWaitsForAFullServer(t *testing.T) {
	t.Parallel()
	server := pgtest.LimitedServer(t, 1)
	target, err := system.WithSchema(server, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	hold, err := pgx.Connect(ctx, server) // the role's one connection
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := system.Open(ctx, target, system.Options{ConnectWait: 200 * time.Millisecond}); !errors.Is(err, system.ErrUnavailable) || !strings.Contains(err.Error(), "53300") {
		t.Fatalf("Open on a full server: got %v, want ErrUnavailable naming SQLSTATE 53300", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("Open gave up after %v, before its ConnectWait of 200ms", took)
	}
	freed := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		hold.Close(context.Background())
		close(freed)
	}()
	o, err := system.Open(ctx, target, system.Options{ConnectWait: time.Minute})
	if err != nil {
		t.Fatalf("Open while a connection is freed: %v", err)
	}
	select {
	case <-freed:
	default:
		t.Error("Open connected while the role's one connection was still held")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresPoolIsShared: Outboxes opened with a PostgresPool take
// their connections from it, one after the other on a pool of one, and
// leave it open when they close; a pool of another app database is
// refused.
func TestPostgresPoolIsShared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	target := pgtest.URL(t)
	pool, err := system.NewPostgresPool(ctx, target, system.Options{MaxConns: 1, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for i := range 3 {
		o, err := system.Open(ctx, target, system.Options{Pool: pool, Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.RecordApproval(ctx, fmt.Sprintf("case-%d", i), "Call back"); err != nil {
			t.Fatal(err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Two open at once share the one connection.
	a, err := system.Open(ctx, target, system.Options{Pool: pool, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := system.Open(ctx, target, system.Options{Pool: pool, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*system.Outbox{a, b} {
		snap, err := o.Snapshot(ctx)
		if err != nil || len(snap.Outbox) != 3 {
			t.Fatalf("a snapshot through the shared pool: %d rows, %v; want the 3 approved", len(snap.Outbox), err)
		}
		o.Close()
	}
	other := pgtest.URL(t)
	if _, err := system.Open(ctx, other, system.Options{Pool: pool}); !errors.Is(err, system.ErrInvalidInput) {
		t.Errorf("Open of %s with the pool of %s: got %v, want ErrInvalidInput", other, target, err)
	}
}

// TestPostgresSessionSettings: an Outbox's sessions on PostgreSQL commit
// as its durability says (a durable commit waits for the server's disk,
// synchronous_commit on; a process-safe one does not) and wait for a lock
// as long as its busy timeout, in whole milliseconds and at least one,
// since a lock_timeout of 0 waits forever.
func TestPostgresSessionSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                     string
		opts                     system.Options
		lockTimeout, synchronous string
	}{
		{"durable, the default busy timeout", system.Options{}, fmt.Sprint(system.DefaultBusyTimeout.Milliseconds()), "on"},
		{"process-safe, 2.5 s", system.Options{Durability: system.ProcessSafe, BusyTimeout: 2500 * time.Millisecond}, "2500", "off"},
		{"durable, under a millisecond", system.Options{BusyTimeout: 300 * time.Microsecond}, "1", "on"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			app, err := system.Open(ctx, pgtest.URL(t), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			var lockTimeout, synchronous string
			if err := app.DB().QueryRowContext(ctx, `SELECT (SELECT setting FROM pg_settings WHERE name = 'lock_timeout'),
				(SELECT setting FROM pg_settings WHERE name = 'synchronous_commit')`).Scan(&lockTimeout, &synchronous); err != nil {
				t.Fatal(err)
			}
			if lockTimeout != tt.lockTimeout || synchronous != tt.synchronous {
				t.Errorf("lock_timeout %s ms, synchronous_commit %s; want %s ms, %s", lockTimeout, synchronous, tt.lockTimeout, tt.synchronous)
			}
		})
	}
}
