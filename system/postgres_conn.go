package system

import (
	"cmp"
	"context"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Connecting to PostgreSQL: the pool of an app database's handle, its
// sessions set as the Options say (durability, busy timeout, read-only,
// the worker's name, Harness.WrapConn), and a failed connection said on
// one line.

// PingPostgres connects to the server of target, a PostgreSQL URL (its
// schema parameter aside), and returns an error that says why on one
// line when it cannot: a command that is about to make things for the
// server checks it first. It waits for a server that is full or starting
// for wait (0 means DefaultConnectWait) while ctx lasts.
func PingPostgres(ctx context.Context, target string, wait time.Duration) error {
	t, err := parsePostgres(target)
	if err != nil {
		return err
	}
	var conn *pgx.Conn
	err = WaitForServer(ctx, cmp.Or(wait, DefaultConnectWait), func() (err error) {
		conn, err = pgx.Connect(ctx, t.connect)
		return err
	})
	if err != nil {
		return connectError(t, err)
	}
	return conn.Close(ctx)
}

// WaitForServer calls connect, a connection to a PostgreSQL server,
// until it succeeds, fails in a way that waiting does not mend (the
// server is not full nor starting), ctx is done, or wait has passed,
// sleeping between tries from firstConnectPause, twice as long each
// time, up to maxConnectPause, and trying a last time when wait has
// passed. It returns connect's last error.
func WaitForServer(ctx context.Context, wait time.Duration, connect func() error) error {
	return waitForServer(ctx, wait, connect, realClock{})
}

// The pauses of WaitForServer between tries: the first, doubled after
// each try, and the longest.
const (
	firstConnectPause = 50 * time.Millisecond
	maxConnectPause   = 2 * time.Second
)

// clock is what WaitForServer reads the time and sleeps on: the real
// one, or a test's.
type clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// realClock is the machine's clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// waitForServer is WaitForServer on clock c.
func waitForServer(ctx context.Context, wait time.Duration, connect func() error, c clock) error {
	deadline := c.Now().Add(wait)
	for pause := firstConnectPause; ; pause = min(2*pause, maxConnectPause) {
		err := connect()
		left := deadline.Sub(c.Now())
		if err == nil || !waitable(err) || left <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-c.After(min(pause, left)):
		}
	}
}

// openPostgres opens the app database that target names, creating its
// schema and tables in one transaction when the schema holds none. A
// schema that holds tables of something else, or a newer handoff's, is
// refused before anything is written. Read-only, it creates nothing and
// every transaction is read-only. With opts.Pool it takes its
// connections from that pool, and leaves it open when it closes.
func openPostgres(ctx context.Context, target string, opts Options, readOnly bool) (*statements, error) {
	t, err := parsePostgres(target)
	if err != nil {
		return nil, err
	}
	pool, release := opts.Pool, func() {}
	switch {
	case pool == nil:
		if pool, err = newPostgresPool(ctx, t, opts, readOnly); err != nil {
			return nil, err
		}
		release = pool.Close
	case pool.target != t || pool.readOnly != readOnly:
		return nil, invalid("the pool of %s serves %s", target, pool.target.shown)
	}
	db := stdlib.OpenDBFromPool(pool.pool)
	if opts.Pool != nil {
		// A connection goes back to the shared pool as soon as a
		// statement is done with it: another Outbox on the pool may
		// need it.
		db.SetMaxIdleConns(0)
	}
	from, err := preparePostgres(ctx, db, t, readOnly)
	if err != nil {
		db.Close()
		release()
		return nil, err
	}
	return &statements{db: db, group: &group{}, dialect: &dialect{schema: t.schema, hook: opts.Harness.Hook}, release: release, upgradedFrom: from}, nil
}

// PostgresPool is a pool of connections to the app database in
// PostgreSQL that a URL names, which Outboxes opened with it (see
// Options.Pool) share, and which outlives them: a process that opens and
// closes Outboxes on one database often (the harness, at every simulated
// restart) keeps its sessions, each of which costs the server a process
// to start. It holds at most opts.MaxConns connections.
type PostgresPool struct {
	pool     *pgxpool.Pool
	target   postgresTarget
	readOnly bool
}

// NewPostgresPool connects to the app database that target names as
// opts say (the worker's name, durability, busy timeout, Dial,
// Harness.WrapConn, MaxConns, ConnectWait), for Outboxes that Open with
// it.
func NewPostgresPool(ctx context.Context, target string, opts Options) (*PostgresPool, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	t, err := parsePostgres(target)
	if err != nil {
		return nil, err
	}
	return newPostgresPool(ctx, t, opts, false)
}

// Close closes the pool's connections; the Outboxes opened with it must
// be closed first.
func (p *PostgresPool) Close() { p.pool.Close() }

// newPostgresPool connects to t as opts say, waiting for a server that
// is full or starting (see WaitForServer).
func newPostgresPool(ctx context.Context, t postgresTarget, opts Options, readOnly bool) (*PostgresPool, error) {
	d, busy := opts.Durability, opts.BusyTimeout
	cfg, err := pgxpool.ParseConfig(t.connect)
	if err != nil {
		return nil, invalid("%s is not a PostgreSQL URL: %v", t.shown, err)
	}
	if _, err := d.Synchronous(); err != nil {
		return nil, err
	}
	params := cfg.ConnConfig.RuntimeParams
	params["search_path"] = t.schema
	// The server shows which worker a connection is, in pg_stat_activity.
	params["application_name"] = applicationName(opts.Worker)
	params["synchronous_commit"] = "on"
	if d != Durable {
		// Safe when the app's process dies, as ProcessSafe is on
		// SQLite; a crash of the server, like one of the machine, can
		// lose the last commits.
		params["synchronous_commit"] = "off"
	}
	if busy > 0 {
		// PostgreSQL counts whole milliseconds, and 0 waits forever.
		params["lock_timeout"] = strconv.FormatInt(max(1, busy.Milliseconds()), 10)
	}
	if readOnly {
		params["default_transaction_read_only"] = "on"
	}
	if opts.Dial != nil {
		cfg.ConnConfig.DialFunc = opts.Dial
		cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	}
	if wrap := opts.Harness.WrapConn; wrap != nil {
		cfg.ConnConfig.AfterNetConnect = func(_ context.Context, _ *pgconn.Config, conn net.Conn) (net.Conn, error) {
			return wrap(conn), nil
		}
	}
	cfg.MaxConns = int32(cmp.Or(opts.MaxConns, DefaultMaxConns))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(t, err)
	}
	if err := WaitForServer(ctx, cmp.Or(opts.ConnectWait, DefaultConnectWait), func() error { return pool.Ping(ctx) }); err != nil {
		pool.Close()
		return nil, connectError(t, err)
	}
	return &PostgresPool{pool: pool, target: t, readOnly: readOnly}, nil
}

// applicationName is the application_name of the connections of a
// worker's Outbox: "handoff " and the worker's name, cut to the 63 bytes
// PostgreSQL keeps.
func applicationName(worker string) string {
	name := "handoff " + worker
	for len(name) > 63 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// connectError is the error of a connection to t's server that failed,
// on one line: pgx says which addresses it tried, one per line, and the
// last says why. The error it wraps keeps them all.
func connectError(t postgresTarget, err error) error {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return &connectFailure{shown: t.shown, why: strings.TrimSpace(lines[len(lines)-1]), err: err}
}

// connectFailure is a connection that failed, said on one line; one the
// server refused for want of room, or that found no server, is
// ErrUnavailable.
type connectFailure struct {
	shown, why string
	err        error
}

func (e *connectFailure) Error() string {
	return "system: cannot connect to " + e.shown + ": " + e.why
}

func (e *connectFailure) Unwrap() []error {
	if driverClass(e.err) == ErrUnavailable {
		return []error{ErrUnavailable, e.err}
	}
	return []error{e.err}
}
