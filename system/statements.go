package system

import (
	"context"
	"database/sql"
	"sync"
)

// statements holds the queries of one database handle, each prepared once
// on SQLite, the first time a write or a read outside a transaction
// needs it: SQLite spends most of a small statement's time parsing it,
// and a handle that a worker opens uses few of them. A write names its
// queries (see write), and they are prepared before its transaction
// begins, because the handle has a single connection, which a
// transaction holds while it runs.
type statements struct {
	db       *sql.DB
	mu       sync.Mutex // guards prepared
	prepared map[string]*sql.Stmt
	group    *group // commits the writes of this process's handles on the file together
	release  func() // gives the file's handle back (see hold)
	// dialect is PostgreSQL's, whose queries are the SQLite ones in its
	// SQL (see postgresText); nil is SQLite.
	dialect *dialect
	// upgradedFrom is the schema version the database had when this
	// handle's open upgraded it in place, 0 when it did not.
	upgradedFrom int
}

// ensure prepares those of queries that are not prepared yet, on a
// SQLite handle, outside any transaction: it waits for the handle's
// connection, so it must not be called while the caller holds a
// transaction on it. On PostgreSQL it prepares nothing: pgx prepares
// each statement on a connection the first time it runs there and keeps
// it, and preparing up front would cost every new pool a round trip per
// query.
func (s *statements) ensure(ctx context.Context, queries ...string) error {
	if s.dialect != nil {
		return nil
	}
	for _, q := range queries {
		if _, ok := s.stmt(ctx, nil, q); ok {
			continue
		}
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			return driverError("preparing a statement", err)
		}
		s.mu.Lock()
		if _, ok := s.prepared[q]; ok {
			st.Close() // another caller prepared it meanwhile
		} else {
			if s.prepared == nil {
				s.prepared = map[string]*sql.Stmt{}
			}
			s.prepared[q] = st
		}
		s.mu.Unlock()
	}
	return nil
}

// write runs fn, which runs queries (a query it runs that is not among
// them is parsed on every run), in a write transaction committed together
// with the writes that this process's other handles on the file make
// meanwhile (see group): the batch's handle prepares them before the
// transaction begins. fn must use the ctx and statements it is given.
func (s *statements) write(ctx context.Context, doing string, queries []string, fn func(ctx context.Context, tx *sql.Tx, q *statements) error) error {
	if s.dialect != nil {
		return s.dialect.write(ctx, s, doing, fn)
	}
	return s.group.do(ctx, s, doing, queries, fn)
}

// text is query in the handle's dialect.
func (s *statements) text(query string) string {
	if s.dialect == nil {
		return query
	}
	return postgresText(query)
}

// serialise makes the rest of tx run after, not beside, any other
// transaction that serialises on name: a write that reads whether a key
// is there and inserts it if not. SQLite's BEGIN IMMEDIATE serialises
// every writer already; PostgreSQL takes a lock on name until tx ends.
func (s *statements) serialise(ctx context.Context, tx *sql.Tx, name string) error {
	if s.dialect == nil {
		return nil
	}
	return driverError("waiting for "+name, s.exec(ctx, tx, sqlSerialise, lockName(s.dialect.schema, name)))
}

// stmt returns the statement prepared for query, bound to tx unless tx
// is nil; ok is false when none is.
func (s *statements) stmt(ctx context.Context, tx *sql.Tx, query string) (st *sql.Stmt, ok bool) {
	s.mu.Lock()
	st, ok = s.prepared[query] // nil map: nothing prepared yet
	s.mu.Unlock()
	if ok && tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	return st, ok
}

// execResult runs a statement in tx, or on the handle when tx is nil.
func (s *statements) execResult(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.ExecContext(ctx, args...)
	}
	if tx != nil {
		return tx.ExecContext(ctx, s.text(query), args...)
	}
	return s.db.ExecContext(ctx, s.text(query), args...)
}

// exec runs a statement in tx.
func (s *statements) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := s.execResult(ctx, tx, query, args...)
	return err
}

// row runs a one-row query in tx, or on the handle when tx is nil.
func (s *statements) row(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if tx == nil {
		_ = s.ensure(ctx, query) // on an error, the query below says it
	}
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.QueryRowContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryRowContext(ctx, s.text(query), args...)
	}
	return s.db.QueryRowContext(ctx, s.text(query), args...)
}

// queryRow runs a one-row query in tx and scans it into dest.
func (s *statements) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	return s.row(ctx, tx, query, args...).Scan(dest...)
}

// query runs a query in tx, or on the handle when tx is nil.
func (s *statements) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if tx == nil {
		_ = s.ensure(ctx, query) // on an error, the query below says it
	}
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.QueryContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryContext(ctx, s.text(query), args...)
	}
	return s.db.QueryContext(ctx, s.text(query), args...)
}

// close closes every prepared statement and then the database handle.
func (s *statements) close() error {
	s.mu.Lock()
	for _, st := range s.prepared {
		st.Close()
	}
	s.mu.Unlock()
	defer s.release()
	return s.db.Close()
}
