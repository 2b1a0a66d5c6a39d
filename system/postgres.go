package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// An app database may live in PostgreSQL instead of a SQLite file: Open
// and OpenReadOnly take a URL postgres://… (or postgresql://…) wherever
// they take a path. The tables live in one PostgreSQL schema, named by the
// URL's schema parameter (postgres://host/db?schema=crm_followups), or
// DefaultSchema. The protocol is the same on both: every write is one
// transaction, a claim takes its row FOR UPDATE SKIP LOCKED so that
// workers on many machines never wait for each other's rows, and the
// settle is the same fenced UPDATE. The CRM simulation stays a SQLite
// file.

// DefaultSchema is the PostgreSQL schema of an app database whose URL
// names none.
const DefaultSchema = "handoff"

// IsPostgres reports whether target names a PostgreSQL database, a URL
// postgres://… or postgresql://…, rather than a SQLite file.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// postgresVersion is the schema version of a PostgreSQL app database.
// Version 2 made approvals.title BYTEA (see postgresSchema); an app
// database of version 1 is migrated when it is opened for writing (see
// migrations).
const postgresVersion = 2

// postgresSchema creates the tables of an app database in the schema on
// the search path: SQLite's latest schema, in PostgreSQL's types, but for
// approvals.title, which holds the title's UTF-8 bytes: a title may hold
// NUL, which PostgreSQL's TEXT cannot (see statements.titleArg).
const postgresSchema = `
	CREATE TABLE handoff_version (
		kind    TEXT NOT NULL,
		version INTEGER NOT NULL
	);
	CREATE TABLE approvals (
		seq     BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
		key     TEXT PRIMARY KEY,
		case_id TEXT NOT NULL,
		title   BYTEA NOT NULL,
		payload TEXT NOT NULL
	);
	CREATE TABLE outbox (
		seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		key              TEXT NOT NULL UNIQUE REFERENCES approvals (key),
		state            TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
		attempts         INTEGER NOT NULL CHECK (attempts >= 0),
		remote_id        BIGINT CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
		last_error       TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted', 'deadline', 'retention-expired', 'rejected')
		                             OR last_error LIKE 'local: _%'),
		created_at       BIGINT NOT NULL DEFAULT 0,
		next_attempt_at  BIGINT NOT NULL DEFAULT 0,
		first_claimed_at BIGINT NOT NULL DEFAULT 0,
		last_attempt_at  BIGINT NOT NULL DEFAULT 0,
		sent_at          BIGINT NOT NULL DEFAULT 0,
		lease_owner      TEXT CHECK (lease_owner IS NULL OR state = 'pending'),
		lease_until      BIGINT NOT NULL DEFAULT 0,
		fence            BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
	CREATE INDEX outbox_lease ON outbox (lease_owner) WHERE lease_owner IS NOT NULL;
	CREATE TABLE meta (
		name  TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	CREATE TABLE audit (
		seq    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at     BIGINT NOT NULL,
		actor  TEXT NOT NULL,
		action TEXT NOT NULL,
		key    TEXT NOT NULL,
		reason TEXT NOT NULL
	);
	INSERT INTO handoff_version (kind, version) VALUES ('app', 2);`

// migrations are the statements that take an app database of each
// version below postgresVersion to the next, by the version they start
// from, with every table named as SCHEMA.table: version 1's
// approvals.title was TEXT, which cannot hold NUL.
var migrations = map[int]string{
	1: `ALTER TABLE SCHEMA.approvals ALTER COLUMN title TYPE BYTEA USING convert_to(title, 'UTF8');
		UPDATE SCHEMA.handoff_version SET version = 2`,
}

// sqlSerialise holds a lock on a name until the transaction ends (see
// statements.serialise). The lock is the server's, not a schema's: a
// name starts with its schema's.
const sqlSerialise = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// lockName is the name sqlSerialise locks to serialise on name in schema:
// the lock is the server's, so that its name starts with the schema's.
// Every write that serialises on a name, through database/sql or a
// caller's pgx transaction, takes the lock of this name.
func lockName(schema, name string) string { return schema + " " + name }

// postgresQueries are the queries whose PostgreSQL text is more than
// their SQLite text with the parameters numbered $1, $2 …, by their
// SQLite text.
var postgresQueries = map[string]string{
	// The claim skips the rows another worker's claim holds, instead of
	// waiting for its transaction. It finds its row in the outbox alone
	// and joins the approval to that row only: before the server has
	// statistics on the outbox (a new schema, a sudden backlog), it may
	// plan to sort every pending row, and must not join each of them.
	sqlEligible: `WITH o AS (
			SELECT seq, key, attempts, last_error, created_at, first_claimed_at, fence FROM outbox
			WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_owner IS NULL OR lease_until <= $1)
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		SELECT o.seq, o.key, a.payload, o.attempts, coalesce(o.last_error, ''), o.created_at, o.first_claimed_at, o.fence
		FROM o JOIN approvals a ON a.key = o.key`,
	sqlEarliest: `SELECT coalesce(min(greatest(next_attempt_at, CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_until END)), 0)
		FROM outbox WHERE state = 'pending'`,
	sqlLockRow:   rebind(sqlLockRow) + ` FOR UPDATE`,
	sqlApprovals: `SELECT key, case_id, title, payload FROM approvals ORDER BY seq`,
	sqlRaiseBudget: `INSERT INTO meta (name, value) VALUES ('budget', $1)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)`,
}

// dialect is what a PostgreSQL handle needs beyond SQLite's: its schema,
// and the hook it passes before COMMIT; it runs a write in a transaction
// of its own.
type dialect struct {
	schema string
	hook   Hook // passed before every COMMIT
}

// postgresText is query, written for SQLite, in PostgreSQL's SQL.
func postgresText(query string) string {
	if t, ok := postgresQueries[query]; ok {
		return t
	}
	return rebind(query)
}

// write runs fn in a transaction of its own. PostgreSQL commits the
// transactions of many connections together itself; a claim never waits
// for another's row, and the writes that read before they write lock
// what they read (FOR UPDATE, serialise).
func (d *dialect) write(ctx context.Context, s *statements, doing string, fn func(ctx context.Context, tx *sql.Tx, q *statements) error) error {
	if err := ctx.Err(); err != nil {
		return driverError(doing, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return driverError(doing, err)
	}
	defer tx.Rollback()
	if err := fn(ctx, tx, s); err != nil {
		if class := driverClass(err); class != nil {
			// The statement failed the whole transaction, as such an
			// error fails a SQLite batch: it names the write, as
			// SQLite's does.
			return &DatabaseError{Class: class, Doing: doing, Err: err}
		}
		return err
	}
	if err := s.dialect.hook.pass(PointBeforeCommit); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return commitError(doing, err)
	}
	s.group.commits.Add(1)
	s.group.writes.Add(1)
	return nil
}

// RecordApprovalPgx is RecordApprovalTx for an app that talks to
// PostgreSQL through pgx: tx is the caller's transaction on this Outbox's
// database, begun on any pool with any search path (the statements name
// the Outbox's schema), so that the caller's own business write, the
// approval and the outbox row commit together. The caller commits; on an
// error it must roll back. The transaction must be READ COMMITTED (the
// default): at a stricter isolation a concurrent approval of the same key
// fails the caller's transaction instead of being a harmless repeat. On
// a SQLite app database it returns ErrInvalidInput.
func (o *Outbox) RecordApprovalPgx(ctx context.Context, tx pgx.Tx, caseID, title string) (string, error) {
	switch {
	case o.q.dialect == nil:
		return "", invalid("%s is a SQLite file: record in a database/sql transaction (RecordApprovalTx)", o.path)
	case tx == nil:
		return "", invalid("transaction is nil")
	}
	a, err := NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	if err := o.record(ctx, pgxRunner{tx, o.q.dialect.schema}, a); err != nil {
		return "", err
	}
	return a.Key, nil
}

// pgxRunner runs the statements of a write in a caller's pgx transaction,
// each table named with its schema.
type pgxRunner struct {
	tx     pgx.Tx
	schema string
}

// appTables are the names of an app database's tables in a query.
var appTables = regexp.MustCompile(`\b(approvals|outbox|meta|audit)\b`)

// text is query in PostgreSQL's SQL, its tables named with r's schema.
func (r pgxRunner) text(query string) string {
	return appTables.ReplaceAllString(postgresText(query), r.schema+".$1")
}

func (r pgxRunner) exec(ctx context.Context, query string, args ...any) error {
	_, err := r.tx.Exec(ctx, r.text(query), args...)
	return err
}

func (r pgxRunner) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return r.tx.QueryRow(ctx, r.text(query), args...).Scan(dest...)
}

func (r pgxRunner) serialise(ctx context.Context, name string) error {
	_, err := r.tx.Exec(ctx, sqlSerialise, lockName(r.schema, name))
	return driverError("waiting for "+name, err)
}

// commitError is the error of a COMMIT that failed. PostgreSQL answers
// a COMMIT it refused with an error of the transaction (a serialization
// failure, a constraint checked at commit): nothing was written. When the
// connection itself failed instead (it closed, the server ended it, the
// reply never came), the commit may or may not have happened, and the
// caller must not assume either: ErrCommitUnknown.
func commitError(doing string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Code, "08") && !strings.HasPrefix(pe.Code, "57") {
		return driverError(doing, err)
	}
	return &DatabaseError{Class: ErrCommitUnknown, Doing: doing, Err: err}
}

// Query is query, written for SQLite, in the dialect of the Outbox's
// database: itself on SQLite; on PostgreSQL with its parameters numbered
// $1, $2 … as SQLite numbers them (?N stays N). A caller that runs SQL of
// its own on DB, as package designs does, writes it once for both; it
// keeps to what both say alike (no SQLite function, no rowid).
func (o *Outbox) Query(query string) string { return o.q.text(query) }

// rebind numbers the parameters of a SQLite query as PostgreSQL does: ?N
// becomes $N, and a bare ? the next number after the largest so far, as
// SQLite counts it.
func rebind(query string) string {
	var b strings.Builder
	largest := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := largest + 1
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j]) // digits only
		}
		largest = max(largest, n)
		b.WriteString("$" + strconv.Itoa(n))
		i = j - 1
	}
	return b.String()
}

// schemaName is what a schema parameter may be: a plain lower-case
// PostgreSQL identifier, so that it needs no quoting.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// postgresTarget is a PostgreSQL URL taken apart: the URL to connect
// with, without the schema parameter, the schema, and the URL to show,
// without the password.
type postgresTarget struct {
	connect, schema, shown string
}

// parsePostgres takes target apart, refusing a URL that does not parse
// and a schema that is not a plain identifier.
func parsePostgres(target string) (postgresTarget, error) {
	shown := Redact(target)
	u, err := url.Parse(target)
	if err != nil {
		// The parser's own words could quote the password.
		return postgresTarget{}, invalid("%s is not a PostgreSQL URL (a password with / ? # or @ must be percent-encoded)", shown)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return postgresTarget{}, invalid("the parameters of %s do not parse (a ';' must be written %%3B)", shown)
	}
	schema := DefaultSchema
	switch len(q["schema"]) {
	case 0:
	case 1:
		schema = q.Get("schema")
		q.Del("schema")
	default:
		return postgresTarget{}, invalid("%s names the schema %d times; name it once", shown, len(q["schema"]))
	}
	if !schemaName.MatchString(schema) {
		return postgresTarget{}, invalid("schema %q in %s is not a plain PostgreSQL name (lower-case letters, digits and _, not starting with a digit, at most 63)", schema, shown)
	}
	u.RawQuery = q.Encode()
	return postgresTarget{connect: u.String(), schema: schema, shown: shown}, nil
}

// WithSchema is the PostgreSQL URL target with its schema parameter set
// to schema, or removed when schema is "": the URL of an app database on
// a server, or of the server.
func WithSchema(target, schema string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", invalid("%s is not a PostgreSQL URL", Redact(target))
	}
	q := u.Query()
	q.Del("schema")
	if schema != "" {
		q.Set("schema", schema)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// PingPostgres connects to the server of target, a PostgreSQL URL (its
// schema parameter aside), and returns an error that says why on one
// line when it cannot: a command that is about to make things for the
// server checks it first.
func PingPostgres(ctx context.Context, target string) error {
	t, err := parsePostgres(target)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, t.connect)
	if err != nil {
		return connectError(t, err)
	}
	return conn.Close(ctx)
}

// Redact hides the password of what may be a URL, for a message.
func Redact(target string) string {
	u, err := url.Parse(target)
	if err == nil && u.User != nil && !strings.Contains(u.Host+u.Path+u.RawQuery, "@") {
		return u.Redacted()
	}
	// A URL that does not parse, or parses with its password read as a
	// port or a path (an unencoded / ? or #): everything up to the last
	// @ may be the password.
	scheme, rest, ok := strings.Cut(target, "://")
	if at := strings.LastIndex(rest, "@"); ok && at >= 0 {
		return scheme + "://…" + rest[at:]
	}
	return target
}

// openPostgres opens the app database that target names, creating its
// schema and tables in one transaction when the schema holds none. A
// schema that holds tables of something else, or a newer handoff's, is
// refused before anything is written. Read-only, it creates nothing and
// every transaction is read-only.
func openPostgres(ctx context.Context, target string, opts Options, readOnly bool) (*statements, error) {
	d, busy := opts.Durability, opts.BusyTimeout
	t, err := parsePostgres(target)
	if err != nil {
		return nil, err
	}
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
	if wrap := opts.WrapConn; wrap != nil {
		cfg.ConnConfig.AfterNetConnect = func(_ context.Context, _ *pgconn.Config, conn net.Conn) (net.Conn, error) {
			return wrap(conn), nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(t, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(t, err)
	}
	db := stdlib.OpenDBFromPool(pool)
	if err := preparePostgres(ctx, db, t, readOnly); err != nil {
		db.Close()
		pool.Close()
		return nil, err
	}
	return &statements{db: db, group: &group{}, dialect: &dialect{schema: t.schema, hook: opts.Hook}, release: func() { pool.Close() }}, nil
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

// connectFailure is a connection that failed, said on one line.
type connectFailure struct {
	shown, why string
	err        error
}

func (e *connectFailure) Error() string {
	return "system: cannot connect to " + e.shown + ": " + e.why
}

func (e *connectFailure) Unwrap() error { return e.err }

// preparePostgres checks what schema t.schema holds and, unless
// readOnly, creates the tables of an app database in it when it holds
// none, or migrates one of an older version: an app database of this
// version is opened at once; an empty or older schema is looked at again,
// and filled or migrated, under a lock that one opening at a time holds.
// Read-only, an older app database is read as it is: its tables have the
// same columns, and what they hold scans into the same Go types.
func preparePostgres(ctx context.Context, db *sql.DB, t postgresTarget, readOnly bool) error {
	version, err := inspectSchema(ctx, db, t)
	switch {
	case err != nil || version == postgresVersion:
		return err
	case readOnly && version == 0:
		return fmt.Errorf("%w: schema %s in %s holds no handoff app database", ErrNotFound, t.schema, t.shown)
	case readOnly:
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return driverError("opening "+t.shown, err)
	}
	defer tx.Rollback()
	// Making or migrating the schema is set-up, done once, not a write
	// that a busy database should refuse: it waits for the locks it
	// takes as long as ten seconds, however short the handle's busy
	// timeout.
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return driverError("opening "+t.shown, err)
	}
	if _, err := tx.ExecContext(ctx, sqlSerialise, "handoff schema "+t.schema); err != nil {
		return driverError("opening "+t.shown, err)
	}
	// Another opening may have made or migrated it meanwhile.
	switch version, err = inspectSchema(ctx, tx, t); {
	case err != nil || version == postgresVersion:
		return err
	case version == 0:
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+t.schema); err != nil {
			return driverError("creating schema "+t.schema, err)
		}
		if _, err := tx.ExecContext(ctx, postgresSchema); err != nil {
			return driverError("creating the tables of schema "+t.schema, err)
		}
		return driverError("creating schema "+t.schema, tx.Commit())
	}
	for ; version < postgresVersion; version++ {
		stmts := strings.ReplaceAll(migrations[version], "SCHEMA.", t.schema+".")
		if _, err := tx.ExecContext(ctx, stmts); err != nil {
			return driverError(fmt.Sprintf("migrating schema %s from version %d", t.schema, version), err)
		}
	}
	return driverError("migrating schema "+t.schema, tx.Commit())
}

// inspectSchema returns the version of the app database schema t.schema
// holds, 0 when it holds no table, and refuses one that holds tables of
// something else or of a newer handoff.
func inspectSchema(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t postgresTarget) (version int, err error) {
	var tables int
	var hasVersion bool
	err = q.QueryRowContext(ctx, `SELECT count(*), coalesce(bool_or(c.relname = 'handoff_version'), false)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`, t.schema).Scan(&tables, &hasVersion)
	switch {
	case err != nil:
		return 0, driverError("reading the tables of schema "+t.schema, err)
	case tables == 0:
		return 0, nil
	case !hasVersion:
		return 0, fmt.Errorf("%w: schema %s in %s holds tables that are not a handoff app database's; name another (?schema=…)", ErrWrongDatabase, t.schema, t.shown)
	}
	var kind string
	if err := q.QueryRowContext(ctx, `SELECT kind, version FROM `+t.schema+`.handoff_version`).Scan(&kind, &version); err != nil {
		return 0, driverError("reading the schema version", err)
	}
	switch {
	case kind != "app":
		return 0, fmt.Errorf("%w: schema %s in %s is not a handoff app database", ErrWrongDatabase, t.schema, t.shown)
	case version > postgresVersion:
		return 0, fmt.Errorf("%w: schema %s in %s has version %d, this handoff knows %d", ErrNewerSchema, t.schema, t.shown, version, postgresVersion)
	case version < 1:
		return 0, fmt.Errorf("%w: schema %s in %s has version %d, which no handoff made", ErrWrongDatabase, t.schema, t.shown, version)
	}
	return version, nil
}

// DropPostgres drops the schema that target names, with its tables, if
// it holds a handoff app database: what a trial or a test does with an
// app database it made for itself once it is done. A schema that holds
// no app database, or something else, is left as it is (ErrNotFound,
// ErrWrongDatabase).
func DropPostgres(ctx context.Context, target string) error {
	o, err := OpenReadOnly(ctx, target)
	if err != nil {
		return err
	}
	defer o.Close()
	_, err = o.db.ExecContext(ctx, `BEGIN READ WRITE; DROP SCHEMA `+o.q.dialect.schema+` CASCADE; COMMIT`)
	return driverError("dropping schema "+o.q.dialect.schema, err)
}
