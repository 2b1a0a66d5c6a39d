package system

import (
	"context"
	"database/sql"
)

// statements holds the queries of one database handle, each prepared once
// when the handle opens: SQLite spends most of a small statement's time
// parsing it. They are prepared up front because the handle has a single
// connection, which a transaction holds while it runs.
type statements struct {
	db       *sql.DB
	prepared map[string]*sql.Stmt
	group    *group // commits the writes of this process's handles on the file together
	release  func() // gives the file's handle back (see hold)
}

// prepare prepares queries, and the statements of a batch's savepoints,
// on the handle; on an error it closes the handle.
func (s *statements) prepare(ctx context.Context, queries ...string) error {
	s.prepared = map[string]*sql.Stmt{}
	for _, q := range append([]string{sqlSavepoint, sqlRollbackTo, sqlReleaseSave}, queries...) {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			s.close()
			return driverError("preparing a statement", err)
		}
		s.prepared[q] = st
	}
	return nil
}

// write runs fn in a write transaction committed together with the
// writes that this process's other handles on the file make meanwhile
// (see group). fn must use the ctx and statements it is given.
func (s *statements) write(ctx context.Context, doing string, fn func(ctx context.Context, tx *sql.Tx, q *statements) error) error {
	return s.group.do(ctx, s, doing, fn)
}

// in returns query bound to tx: the prepared statement where there is one,
// otherwise one prepared for tx alone.
func (s *statements) in(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.prepared[query]; ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// exec runs a statement in tx.
func (s *statements) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	st, err := s.in(ctx, tx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// queryRow runs a one-row query in tx and scans it into dest.
func (s *statements) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	st, err := s.in(ctx, tx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// query runs a query in tx.
func (s *statements) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.in(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// close closes every prepared statement and then the database handle.
func (s *statements) close() error {
	for _, st := range s.prepared {
		st.Close()
	}
	defer s.release()
	return s.db.Close()
}
