package handoff

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of database/sql
	"github.com/outboxlab/handoff/system"
)

// Backend is where an Env keeps the app database. The receiver's CRM is
// a SQLite file on either. Nothing a step prints names the backend, so a
// scenario file expects the same output on both.
type Backend string

const (
	// SQLite keeps the app database in the file app.db of the Env's Dir.
	SQLite Backend = "sqlite"
	// Postgres keeps it in a PostgreSQL schema of the Env's own, made on
	// the server that Config.PostgresURL names and dropped when the Env
	// closes.
	Postgres Backend = "postgres"
)

// Backends are the backends, the default first.
var Backends = []Backend{SQLite, Postgres}

// ParseBackend returns the backend called s.
func ParseBackend(s string) (Backend, error) {
	for _, b := range Backends {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("handoff: unknown backend %q, want %s or %s", s, SQLite, Postgres)
}

// PostgresURLEnv names the variable that gives the PostgreSQL server's
// URL, for the tests and for the CLI's --postgres-url.
const PostgresURLEnv = "HANDOFF_POSTGRES_URL"

// LocalPostgres is the server a machine set up for handoff's tests runs,
// on loopback, where TLS protects nothing and its handshake at every new
// connection cost a fifth of an exploration's time.
const LocalPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresServer is the URL of the PostgreSQL server to run on when none
// is given: PostgresURLEnv's value, or LocalPostgres when it is unset.
func PostgresServer() string {
	if u := os.Getenv(PostgresURLEnv); u != "" {
		return u
	}
	return LocalPostgres
}

// checkBackend returns an error when b is not a backend, or is Postgres
// without a server URL.
func checkBackend(b Backend, postgresURL string) error {
	if _, err := ParseBackend(string(b)); err != nil {
		return err
	}
	if b == Postgres && !system.IsPostgres(postgresURL) {
		return fmt.Errorf("handoff: the postgres backend needs a server URL postgres://…, got %q", system.Redact(postgresURL))
	}
	return nil
}

// pgSchema is the PostgreSQL schema that holds an Env's app database.
// Its name is random, so that lanes, tests, processes and machines that
// share a server each have their own. A connection of its own holds a
// session lock on the name for as long as the schema is in use: a
// process killed before it could drop its schemas leaves them unlocked,
// and the next newSchema on the server drops them.
type pgSchema struct {
	server string // the server's URL, without a schema parameter
	name   string
	target string // the app database's URL: server with schema=name
	owner  *pgx.Conn
}

// schemaPrefix starts the name of every schema newSchema makes; a random
// suffix of schemaSuffixBytes bytes, in hexadecimal, ends it.
const (
	schemaPrefix      = "handoff_"
	schemaSuffixBytes = 8
)

// sqlSchemaLock is the session lock that says a schema is in use; the
// same lock tried is free when nobody holds it.
const (
	sqlSchemaLock    = `SELECT pg_advisory_lock(hashtextextended($1, 1))`
	sqlTrySchemaLock = `SELECT pg_try_advisory_lock(hashtextextended($1, 1))`
	sqlSchemaUnlock  = `SELECT pg_advisory_unlock(hashtextextended($1, 1))`
	sqlSchemasLike   = `SELECT nspname FROM pg_namespace WHERE nspname ~ $1 ORDER BY nspname`
)

// newSchema names a new schema on server, locks the name, and drops the
// schemas of its kind that nobody holds: those of processes that died
// before they dropped theirs. The app database's system.Open makes it.
func newSchema(ctx context.Context, server string) (*pgSchema, error) {
	suffix := make([]byte, schemaSuffixBytes)
	rand.Read(suffix)
	s := &pgSchema{name: schemaPrefix + hex.EncodeToString(suffix)}
	var err error
	if s.server, err = system.WithSchema(server, ""); err != nil {
		return nil, err
	}
	if s.target, err = system.WithSchema(server, s.name); err != nil {
		return nil, err
	}
	if s.owner, err = pgx.Connect(ctx, s.server); err != nil {
		return nil, fmt.Errorf("handoff: connecting to %s: %w", system.Redact(s.server), err)
	}
	if err := s.sweep(ctx); err != nil {
		return nil, errors.Join(err, s.owner.Close(ctx))
	}
	if _, err := s.owner.Exec(ctx, sqlSchemaLock, s.name); err != nil {
		return nil, errors.Join(fmt.Errorf("handoff: locking schema %s: %w", s.name, err), s.owner.Close(ctx))
	}
	return s, nil
}

// sweep drops every schema newSchema made that no session holds. A live
// one is locked from before it was made, so that it is never dropped.
func (s *pgSchema) sweep(ctx context.Context) error {
	names, err := pgxColumn[string](ctx, s.owner, sqlSchemasLike, fmt.Sprintf("^%s[0-9a-f]{%d}$", schemaPrefix, 2*schemaSuffixBytes))
	if err != nil {
		return fmt.Errorf("handoff: listing the schemas left on %s: %w", system.Redact(s.server), err)
	}
	for _, name := range names {
		var free bool
		if err := s.owner.QueryRow(ctx, sqlTrySchemaLock, name).Scan(&free); err != nil {
			return fmt.Errorf("handoff: trying the lock of schema %s: %w", name, err)
		}
		if !free {
			continue
		}
		_, err := s.owner.Exec(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE`)
		if _, uerr := s.owner.Exec(ctx, sqlSchemaUnlock, name); err == nil {
			err = uerr
		}
		if err != nil {
			return fmt.Errorf("handoff: dropping schema %s, left by a process that ended: %w", name, err)
		}
	}
	return nil
}

// pgxColumn returns the one column of query's rows on conn.
func pgxColumn[T any](ctx context.Context, conn *pgx.Conn, query string, args ...any) ([]T, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}

// drop drops the schema and everything in it, keeping its name; a nil
// schema, or one whose name was let go of, is none.
func (s *pgSchema) drop(ctx context.Context) error {
	if s == nil || s.owner == nil {
		return nil
	}
	if _, err := s.owner.Exec(ctx, `DROP SCHEMA IF EXISTS `+s.name+` CASCADE`); err != nil {
		return fmt.Errorf("handoff: dropping schema %s: %w", s.name, err)
	}
	return nil
}

// close drops the schema and lets go of its name.
func (s *pgSchema) close(ctx context.Context) error {
	return errors.Join(s.drop(ctx), s.release(ctx))
}

// release lets go of the schema's name, for good: a schema left under it
// is anybody's to drop. A nil schema has no name to let go of.
func (s *pgSchema) release(ctx context.Context) error {
	if s == nil || s.owner == nil {
		return nil
	}
	err := s.owner.Close(ctx)
	s.owner = nil
	return err
}

// makeAppDatabase readies the place of the Env's app database: on
// PostgreSQL, a schema of its own.
func (e *Env) makeAppDatabase(ctx context.Context) error {
	if err := checkBackend(e.cfg.Backend, e.cfg.PostgresURL); err != nil {
		return err
	}
	if e.cfg.Backend != Postgres {
		return nil
	}
	var err error
	e.schema, err = newSchema(ctx, e.cfg.PostgresURL)
	return err
}

// appTarget is what the Env opens its app database with: the file
// app.db in Dir, or the URL of its schema.
func (e *Env) appTarget() string {
	if e.schema != nil {
		return e.schema.target
	}
	return filepath.Join(e.cfg.Dir, appFile)
}

// removeDatabases removes what a closed Env leaves of its databases, so
// that the next open makes them new: the files in Dir (Close dropped the
// schema of an app database on PostgreSQL).
func (e *Env) removeDatabases() error {
	files := laneFiles
	if e.schema != nil {
		files = files[1:]
	}
	for _, f := range files {
		if err := os.Remove(filepath.Join(e.cfg.Dir, f)); err != nil {
			return err
		}
	}
	return nil
}

// emptier opens the lane's own connection to the schema and prepares
// the statements that empty it back to what it holds now: every table
// that holds no row emptied (those that do, the schema's version, no
// step writes), a table before those it references, and the sequences of
// their identity columns started again. Deleting the few rows of a
// sequence costs a tenth of what TRUNCATE, which makes new files, does.
// Like freshStatements, it knows no schema, so that it serves every
// design; it asks the server's catalog instead.
func (s *pgSchema) emptier(ctx context.Context) (*sql.DB, []*sql.Stmt, error) {
	// The connection's commits need survive nothing but this process.
	u, err := url.Parse(s.server)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	stmts, err := s.emptyingStatements(ctx, db)
	if err != nil {
		for _, st := range stmts {
			st.Close()
		}
		db.Close()
		return nil, nil, err
	}
	return db, stmts, nil
}

// emptyingStatements prepares emptier's statements on db.
func (s *pgSchema) emptyingStatements(ctx context.Context, db *sql.DB) ([]*sql.Stmt, error) {
	tables, err := queryColumn[string](ctx, db, `SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, s.name)
	if err != nil {
		return nil, err
	}
	// referencing[t] are the tables whose foreign keys reference t.
	referencing := map[string][]string{}
	refs, err := db.QueryContext(ctx, `SELECT quote_ident(f.relname), quote_ident(t.relname) FROM pg_constraint c
		JOIN pg_class f ON f.oid = c.conrelid JOIN pg_class t ON t.oid = c.confrelid
		WHERE c.contype = 'f' AND c.connamespace = $1::regnamespace ORDER BY 1, 2`, s.name)
	if err != nil {
		return nil, err
	}
	for refs.Next() {
		var from, to string
		if err := refs.Scan(&from, &to); err != nil {
			refs.Close()
			return nil, err
		}
		referencing[to] = append(referencing[to], from)
	}
	if err := errors.Join(refs.Err(), refs.Close()); err != nil {
		return nil, err
	}
	var order []string
	seen := map[string]bool{}
	var visit func(t string)
	visit = func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		for _, from := range referencing[t] {
			visit(from)
		}
		order = append(order, t)
	}
	for _, t := range tables {
		visit(t)
	}
	var stmts []*sql.Stmt
	var sequences []string
	for _, t := range order {
		qualified := s.name + "." + t
		var held bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+qualified+")").Scan(&held); err != nil {
			return stmts, err
		}
		if held {
			continue
		}
		st, err := db.PrepareContext(ctx, "DELETE FROM "+qualified)
		if err != nil {
			return stmts, err
		}
		stmts = append(stmts, st)
		seqs, err := queryColumn[string](ctx, db, `SELECT pg_get_serial_sequence($1, attname) FROM pg_attribute
			WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND pg_get_serial_sequence($1, attname) IS NOT NULL
			ORDER BY attnum`, qualified)
		if err != nil {
			return stmts, err
		}
		for _, seq := range seqs {
			sequences = append(sequences, "setval('"+strings.ReplaceAll(seq, "'", "''")+"', 1, false)")
		}
	}
	if len(sequences) > 0 {
		st, err := db.PrepareContext(ctx, "SELECT "+strings.Join(sequences, ", "))
		if err != nil {
			return stmts, err
		}
		stmts = append(stmts, st)
	}
	return stmts, nil
}

// queryColumn runs a query of one column and returns its values.
func queryColumn[T any](ctx context.Context, db *sql.DB, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []T
	for rows.Next() {
		var s T
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, s)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// sqlWALPosition asks where the server's write-ahead log ends: every
// commit that changes a table moves it, so an unchanged position means no
// commit changed the app database (other schemas' commits move it too,
// which only costs a read).
const sqlWALPosition = `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`
