// Package sqlwrap wraps the connections of SQLite connectors
// (database/sql/driver) for the harness, in both of its modes. The
// running mode cuts every connection of a process at once when the
// process crashes. The step mode keeps the connections a simulated
// crash closes for the next handle that opens the same file the same
// way, for a new SQLite connection parses the whole schema.
package sqlwrap

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Conns are the connections of the connectors it wraps. The zero value
// wraps them without keeping any.
type Conns struct {
	// Keep keeps a connection that closes cleanly (no transaction may be
	// open on it, it was not cut, and the driver vouches for it) for the
	// next Connect of the same connector, with its prepared statements:
	// a statement closed stays prepared for the next that asks for its
	// query. The settings a handle connects with are part of its
	// connector, so a kept connection serves only a handle that would
	// have made the same one.
	Keep bool
	// Called, unless nil, runs after every call that reaches a
	// connection: the running mode's watchdog hears the process move.
	Called func()

	mu      sync.Mutex
	open    map[*conn]struct{}
	refused error // every Connect fails with it, unless nil
	idle    map[driver.Connector][]*conn
	// generation counts the Drops: a connection made before the last
	// one, which a handle gives back late, is closed for good, for its
	// file may be gone.
	generation int
}

// Wrap wraps c: its connections are w's.
func (w *Conns) Wrap(c driver.Connector) driver.Connector {
	return connector{Connector: c, w: w}
}

// Cut cuts every open connection with err, and returns how many: an
// open transaction is lost, and every later call on the connection
// fails with err, and with driver.ErrBadConn, so that database/sql drops
// the connection and, where it may, runs the call again on a new one.
// A call under way when the cut comes may finish, as if the cut came
// just after it.
func (w *Conns) Cut(err error) int {
	w.mu.Lock()
	open := w.open
	w.open = nil
	w.mu.Unlock()
	for c := range open {
		c.cut(err)
	}
	return len(open)
}

// Refuse cuts every open connection with err, as Cut does, and fails
// every later Connect with err: the process they belong to is gone.
func (w *Conns) Refuse(err error) int {
	w.mu.Lock()
	w.refused = err
	w.mu.Unlock()
	return w.Cut(err)
}

// Drop closes every kept connection, and every connection open now when
// its handle closes it: the files are about to go.
func (w *Conns) Drop() error {
	w.mu.Lock()
	w.generation++
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	var err error
	for _, kept := range idle {
		for _, c := range kept {
			err = errors.Join(err, c.close())
		}
	}
	return err
}

// take returns a kept connection made by by, unless Connect is refused;
// nil if there is none.
func (w *Conns) take(by driver.Connector) (*conn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused != nil {
		return nil, w.refused
	}
	if !w.Keep {
		return nil, nil
	}
	for kept := w.idle[by]; len(kept) > 0; kept = w.idle[by] {
		c := kept[len(kept)-1]
		w.idle[by] = kept[:len(kept)-1]
		if c.failure() == nil { // a cut that raced its keeping closes it
			w.trackLocked(c)
			return c, nil
		}
	}
	return nil, nil
}

// track adds a new connection to the open ones, or refuses it.
func (w *Conns) track(c *conn) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused != nil {
		return w.refused
	}
	c.generation = w.generation
	w.trackLocked(c)
	return nil
}

func (w *Conns) trackLocked(c *conn) {
	if w.open == nil {
		w.open = map[*conn]struct{}{}
	}
	w.open[c] = struct{}{}
}

func (w *Conns) untrack(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, c)
}

// keep sets c aside for the next Connect of its connector, and reports
// whether it did: not if c was made before the last Drop.
func (w *Conns) keep(c *conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.generation != w.generation {
		return false
	}
	if w.idle == nil {
		w.idle = map[driver.Connector][]*conn{}
	}
	w.idle[c.by] = append(w.idle[c.by], c)
	return true
}

type connector struct {
	driver.Connector
	w *Conns
}

func (cr connector) Connect(ctx context.Context) (driver.Conn, error) {
	if c, err := cr.w.take(cr.Connector); err != nil {
		return nil, err
	} else if c != nil {
		return c, nil
	}
	inner, err := cr.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &conn{inner: inner, by: cr.Connector, w: cr.w, mu: make(lock, 1)}
	if err := cr.w.track(c); err != nil {
		inner.Close()
		return nil, err
	}
	return c, nil
}

// lock is a mutex whose waiters are durably blocked in a synctest
// bubble: a cut waiting for a call on the connection must not stop
// virtual time, for the call may itself wait on it (SQLite's busy
// handler sleeps while another process holds the file's lock). A
// sync.Mutex's waiter is not durably blocked; a channel's is.
type lock chan struct{}

func (l lock) Lock()   { l <- struct{}{} }
func (l lock) Unlock() { <-l }

// TryLock takes the lock if it is free, and reports whether it did.
func (l lock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// conn is a connection of a wrapped connector. Every call holds its
// lock; a cut closes the connection (an open transaction rolls back) at
// once if no call is under way, else when that call returns.
type conn struct {
	mu         lock
	inner      driver.Conn
	by         driver.Connector // the connector that made it
	w          *Conns
	generation int // w's when the connection was made
	// failed is set by a cut at once, without the lock, so that no call
	// that begins after it runs, whichever goroutine takes the lock next.
	failed atomic.Pointer[error]
	closed bool
	// What is open on the connection: SQLite closes a connection that
	// has a statement unfinalized only once it is, so closing closes
	// every set of rows, rolls back, and closes every statement first,
	// in that order (rows read through a statement must close before
	// it). tx is the transaction that began and did not end cleanly.
	tx    driver.Tx
	rows  map[*rows]struct{}
	stmts map[*stmt]struct{}
	// prepared are the statements kept prepared, by query (Conns.Keep).
	prepared map[string]*stmt
}

// failure is what a call on the connection fails with: nil unless it
// was cut.
func (c *conn) failure() error {
	if err := c.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// do runs f on the connection unless it was cut.
func (c *conn) do(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failure(); err != nil {
		return err
	}
	if c.w.Called != nil {
		defer c.w.Called()
	}
	return f()
}

func (c *conn) cut(err error) {
	failed := fmt.Errorf("%w: %w", err, driver.ErrBadConn)
	c.failed.CompareAndSwap(nil, &failed)
	if !c.mu.TryLock() {
		go c.close() // once the call under way returns
		return
	}
	defer c.mu.Unlock()
	if !c.closed {
		c.closeLocked()
	}
}

// close closes the connection for good.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.closeLocked()
}

// closeLocked closes every open set of rows, rolls back the open
// transaction, closes every statement, then the connection.
func (c *conn) closeLocked() error {
	c.closed = true
	for r := range c.rows {
		r.inner.Close()
	}
	if c.tx != nil {
		c.tx.Rollback()
		c.tx = nil
	}
	var err error
	for s := range c.stmts {
		err = errors.Join(err, s.inner.Close())
	}
	c.rows, c.stmts, c.prepared = nil, nil, nil
	return errors.Join(err, c.inner.Close())
}

// Close keeps the connection (Conns.Keep) or closes it.
func (c *conn) Close() error {
	c.w.untrack(c)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.w.Keep && c.tx == nil && c.valid() && c.w.keep(c) {
		return nil
	}
	return c.closeLocked()
}

// valid reports whether the connection was not cut and the driver
// vouches for it.
func (c *conn) valid() bool {
	v, ok := c.inner.(driver.Validator)
	return c.failure() == nil && (!ok || v.IsValid())
}

func (c *conn) IsValid() bool { return c.valid() }

func (c *conn) ResetSession(ctx context.Context) error {
	return c.do(func() error {
		if r, ok := c.inner.(driver.SessionResetter); ok {
			return r.ResetSession(ctx)
		}
		return nil
	})
}

func (c *conn) Ping(ctx context.Context) error {
	return c.do(func() error {
		if p, ok := c.inner.(driver.Pinger); ok {
			return p.Ping(ctx)
		}
		return nil
	})
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext returns the statement kept prepared for query if no one
// uses it, or prepares one; with Conns.Keep, the first statement
// prepared for a query stays prepared when it is closed.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var s *stmt
	err := c.do(func() error {
		if kept := c.prepared[query]; kept != nil && !kept.inUse {
			kept.inUse, s = true, kept
			return nil
		}
		var inner driver.Stmt
		var err error
		if pc, ok := c.inner.(driver.ConnPrepareContext); ok {
			inner, err = pc.PrepareContext(ctx, query)
		} else {
			inner, err = c.inner.Prepare(query)
		}
		if err != nil {
			return err
		}
		s = &stmt{inner: inner, c: c, query: query, inUse: true}
		if c.stmts == nil {
			c.stmts = map[*stmt]struct{}{}
		}
		c.stmts[s] = struct{}{}
		if c.w.Keep && c.prepared[query] == nil {
			if c.prepared == nil {
				c.prepared = map[string]*stmt{}
			}
			c.prepared[query] = s
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var t driver.Tx
	err := c.do(func() (err error) {
		if bc, ok := c.inner.(driver.ConnBeginTx); ok {
			t, err = bc.BeginTx(ctx, opts)
		} else {
			t, err = c.inner.Begin() //nolint:staticcheck // the driver has no BeginTx
		}
		if err == nil {
			c.tx = t
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &tx{inner: t, c: c}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	var r driver.Result
	err := c.do(func() (err error) {
		r, err = ec.ExecContext(ctx, query, args)
		return err
	})
	return r, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return c.query(func() (driver.Rows, error) { return qc.QueryContext(ctx, query, args) })
}

// query opens rows on the connection with open, and records them as
// open on it.
func (c *conn) query(open func() (driver.Rows, error)) (driver.Rows, error) {
	var r *rows
	err := c.do(func() error {
		inner, err := open()
		if err != nil {
			return err
		}
		r = &rows{inner: inner, c: c}
		if c.rows == nil {
			c.rows = map[*rows]struct{}{}
		}
		c.rows[r] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// tx is a transaction of a conn: the connection is free to keep once it
// ends cleanly.
type tx struct {
	inner driver.Tx
	c     *conn
}

// Commit commits, unless the connection was cut; a COMMIT that failed
// may leave SQLite's transaction open (SQLITE_BUSY does), so it stays
// the connection's to roll back.
func (t *tx) Commit() error {
	return t.c.do(func() error {
		err := t.inner.Commit()
		if err == nil {
			t.c.tx = nil
		}
		return err
	})
}

func (t *tx) Rollback() error {
	return t.c.do(func() error {
		err := t.inner.Rollback()
		if err == nil {
			t.c.tx = nil
		}
		return err
	})
}

// stmt is a statement of a conn; one kept prepared (Conns.Keep) stays
// prepared when it is closed, for the next Prepare of its query.
type stmt struct {
	inner driver.Stmt
	c     *conn
	query string
	inUse bool
}

func (s *stmt) Close() error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	s.inUse = false
	if c.prepared[s.query] == s {
		return nil
	}
	delete(c.stmts, s)
	return s.inner.Close()
}

func (s *stmt) NumInput() int { return s.inner.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	var r driver.Result
	err := s.c.do(func() (err error) {
		r, err = s.inner.Exec(args) //nolint:staticcheck // the driver's own fallback
		return err
	})
	return r, err
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.query(func() (driver.Rows, error) {
		return s.inner.Query(args) //nolint:staticcheck // the driver's own fallback
	})
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	sc, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		return s.Exec(values(args))
	}
	var r driver.Result
	err := s.c.do(func() (err error) {
		r, err = sc.ExecContext(ctx, args)
		return err
	})
	return r, err
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	sc, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		return s.Query(values(args))
	}
	return s.c.query(func() (driver.Rows, error) { return sc.QueryContext(ctx, args) })
}

// values are the values of args, in order, for a statement that takes
// no context.
func values(args []driver.NamedValue) []driver.Value {
	vs := make([]driver.Value, len(args))
	for i, a := range args {
		vs[i] = a.Value
	}
	return vs
}

// rows are rows read on a conn.
type rows struct {
	inner driver.Rows
	c     *conn
}

func (r *rows) Columns() []string { return r.inner.Columns() }

func (r *rows) Close() error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.c.closed {
		return nil
	}
	delete(r.c.rows, r)
	return r.inner.Close()
}

func (r *rows) Next(dest []driver.Value) error {
	return r.c.do(func() error { return r.inner.Next(dest) })
}
