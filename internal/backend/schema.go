package backend

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/system"
)

// Schema is the PostgreSQL schema that holds an Env's app database.
// Its name is random, so that lanes, tests, processes and machines that
// share a server each have their own. A connection of its own holds a
// session lock on the name for as long as the schema is in use: a
// process killed before it could drop its schemas leaves them unlocked,
// and the next NewSchema on the server drops them.
type Schema struct {
	server string // the server's URL, without a schema parameter
	name   string
	target string // the app database's URL: server with schema=name
	owner  *pgx.Conn
}

// schemaPrefix starts the name of every schema NewSchema makes; a random
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
	sqlSchemasLike   = `SELECT nspname FROM pg_namespace WHERE nspname ~ $1 AND pg_has_role(nspowner, 'USAGE') ORDER BY nspname`
)

// NewSchema names a new schema on server, locks the name, and drops the
// schemas of its kind that nobody holds: those of processes that died
// before they dropped theirs; then it makes the schema (see Make).
func NewSchema(ctx context.Context, server string, wait time.Duration) (*Schema, error) {
	suffix := make([]byte, schemaSuffixBytes)
	rand.Read(suffix)
	s := &Schema{name: schemaPrefix + hex.EncodeToString(suffix)}
	var err error
	if s.server, err = system.WithSchema(server, ""); err != nil {
		return nil, err
	}
	if s.target, err = system.WithSchema(server, s.name); err != nil {
		return nil, err
	}
	if err := system.WaitForServer(ctx, cmp.Or(wait, system.DefaultConnectWait), func() (err error) {
		s.owner, err = pgx.Connect(ctx, s.server)
		return err
	}); err != nil {
		return nil, fmt.Errorf("handoff: connecting to %s: %w", system.Redact(s.server), err)
	}
	if err := s.sweep(ctx); err != nil {
		return nil, errors.Join(err, s.owner.Close(ctx))
	}
	if _, err := s.owner.Exec(ctx, sqlSchemaLock, s.name); err != nil {
		return nil, errors.Join(fmt.Errorf("handoff: locking schema %s: %w", s.name, err), s.owner.Close(ctx))
	}
	if err := s.Make(ctx); err != nil {
		return nil, errors.Join(err, s.owner.Close(ctx))
	}
	return s, nil
}

// sweep drops every schema NewSchema made that no session holds, of
// those its user may drop: on a server shared by several users, each
// sweeps its own. A live
// one is locked from before it was made, so that it is never dropped.
func (s *Schema) sweep(ctx context.Context) error {
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

// Make makes the schema, empty, unless it is there: a design opens its
// app database in a schema that exists.
func (s *Schema) Make(ctx context.Context) error {
	if _, err := s.owner.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+s.name); err != nil {
		return fmt.Errorf("handoff: making schema %s: %w", s.name, err)
	}
	return nil
}

// Drop drops the schema and everything in it, keeping its name; a nil
// schema, or one whose name was let go of, is none.
func (s *Schema) Drop(ctx context.Context) error {
	if s == nil || s.owner == nil {
		return nil
	}
	if _, err := s.owner.Exec(ctx, `DROP SCHEMA IF EXISTS `+s.name+` CASCADE`); err != nil {
		return fmt.Errorf("handoff: dropping schema %s: %w", s.name, err)
	}
	return nil
}

// Close drops the schema and lets go of its name.
func (s *Schema) Close(ctx context.Context) error {
	return errors.Join(s.Drop(ctx), s.Release(ctx))
}

// Release lets go of the schema's name, for good: a schema left under it
// is anybody's to drop. A nil schema has no name to let go of.
func (s *Schema) Release(ctx context.Context) error {
	if s == nil || s.owner == nil {
		return nil
	}
	err := s.owner.Close(ctx)
	s.owner = nil
	return err
}

// Emptier opens the lane's own connection to the schema and prepares
// the statements that empty it back to what it holds now: every table
// that holds no row emptied (those that do, the schema's version, no
// step writes), a table before those it references, and the sequences of
// their identity columns started again. Deleting the few rows of a
// sequence is far cheaper than TRUNCATE, which makes new files.
// Like freshStatements, it knows no schema, so that it serves every
// design; it asks the server's catalog instead.
func (s *Schema) Emptier(ctx context.Context, wait time.Duration) (*sql.DB, []*sql.Stmt, error) {
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
	if err := system.WaitForServer(ctx, cmp.Or(wait, system.DefaultConnectWait), func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("handoff: connecting to %s: %w", system.Redact(s.server), err)
	}
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
func (s *Schema) emptyingStatements(ctx context.Context, db *sql.DB) ([]*sql.Stmt, error) {
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

// SQLWALPosition asks where the server's write-ahead log ends: every
// commit that changes a table moves it, so an unchanged position means no
// commit changed the app database (other schemas' commits move it too,
// which only costs a read).
const SQLWALPosition = `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`

// Name is the schema's name.
func (s *Schema) Name() string { return s.name }

// Target is the URL that opens the app database in the schema: the
// server's, with schema= its name.
func (s *Schema) Target() string { return s.target }

// ServerURL is the URL of the schema's server, without a schema.
func (s *Schema) ServerURL() string { return s.server }
