package sim

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
)

// sqliteKeeper keeps the SQLite connections that the Env's app handles
// close and gives each to the next handle that connects the same way
// (the same file and settings), as sessions.Keeper does on PostgreSQL:
// a simulated crash closes every handle of a process and opens them
// again, and a new connection costs SQLite a parse of the whole schema,
// which was a sixth of an exploration's time. Nothing the system or the
// oracle sees depends on it: a connection keeps no state beyond its
// transaction, one closed with a transaction open is closed for good
// (SQLite rolls it back), and the settings a handle connects with are
// part of its key. A kept connection keeps its prepared statements too,
// for the next handle's first use of each.
type sqliteKeeper struct {
	mu   sync.Mutex
	idle map[driver.Connector][]*keptConn
	// generation counts the keeper's closes: a connection made before
	// the last one, which a handle gives back late, is closed for good,
	// for its file may be gone.
	generation int
}

// wrap is system.Options.Harness.WrapSQLite: the connector's connections are
// kept when their handle closes.
func (k *sqliteKeeper) wrap(c driver.Connector) driver.Connector {
	return keptConnector{Connector: c, k: k}
}

// take returns a kept connection made by c, or nil.
func (k *sqliteKeeper) take(c driver.Connector) *keptConn {
	k.mu.Lock()
	defer k.mu.Unlock()
	kept := k.idle[c]
	if len(kept) == 0 {
		return nil
	}
	conn := kept[len(kept)-1]
	k.idle[c] = kept[:len(kept)-1]
	return conn
}

// keep sets conn aside for the next Connect of its connector, unless it
// was made before the keeper last closed.
func (k *sqliteKeeper) keep(conn *keptConn) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if conn.generation != k.generation {
		return conn.close()
	}
	if k.idle == nil {
		k.idle = map[driver.Connector][]*keptConn{}
	}
	k.idle[conn.by] = append(k.idle[conn.by], conn)
	return nil
}

// close closes every kept connection: the files are about to go, or the
// Env is done.
func (k *sqliteKeeper) close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.generation++
	var err error
	for c, kept := range k.idle {
		for _, conn := range kept {
			err = errors.Join(err, conn.close())
		}
		delete(k.idle, c)
	}
	return err
}

type keptConnector struct {
	driver.Connector
	k *sqliteKeeper
}

func (c keptConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if conn := c.k.take(c.Connector); conn != nil {
		return conn, nil
	}
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.k.mu.Lock()
	generation := c.k.generation
	c.k.mu.Unlock()
	return &keptConn{Conn: conn, by: c.Connector, k: c.k, generation: generation}, nil
}

// keptConn is a connection whose Close keeps it unless a transaction
// may be open on it (one that began and did not end cleanly) or the
// driver no longer vouches for it. database/sql uses a connection from one goroutine at a
// time, so it needs no lock of its own.
type keptConn struct {
	driver.Conn
	by         driver.Connector
	k          *sqliteKeeper
	generation int // the keeper's when the connection was made
	inTx       bool
	// stmts are the statements prepared on the connection, by query:
	// one a handle closes stays prepared for the next that asks.
	stmts map[string]*keptStmt
}

func (c *keptConn) Close() error {
	if c.inTx || !c.IsValid() {
		return c.close()
	}
	return c.k.keep(c)
}

// close finalizes the connection's statements and closes it.
func (c *keptConn) close() error {
	var err error
	for _, st := range c.stmts {
		err = errors.Join(err, st.Stmt.Close())
	}
	c.stmts = nil
	return errors.Join(err, c.Conn.Close())
}

func (c *keptConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return keptTx{Tx: tx, c: c}, nil
}

// PrepareContext returns the statement prepared for query if no one
// uses it, or prepares it; the first statement prepared for a query
// stays prepared when it is closed.
func (c *keptConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if st, ok := c.stmts[query]; ok && !st.inUse {
		st.inUse = true
		return st, nil
	}
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if _, ok := c.stmts[query]; ok {
		return st, nil // the kept one is in use: this one closes for good
	}
	if c.stmts == nil {
		c.stmts = map[string]*keptStmt{}
	}
	kept := &keptStmt{Stmt: st, inUse: true}
	c.stmts[query] = kept
	return kept, nil
}

func (c *keptConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *keptConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *keptConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *keptConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *keptConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// keptTx is a transaction of a keptConn: the connection is free to keep
// once it ends.
type keptTx struct {
	driver.Tx
	c *keptConn
}

// Commit commits; a COMMIT that failed may leave SQLite's transaction
// open (SQLITE_BUSY does), so the connection is then not kept.
func (t keptTx) Commit() error {
	err := t.Tx.Commit()
	t.c.inTx = err != nil
	return err
}

func (t keptTx) Rollback() error {
	err := t.Tx.Rollback()
	t.c.inTx = err != nil
	return err
}

// keptStmt is a statement of a keptConn: closing it leaves it prepared.
type keptStmt struct {
	driver.Stmt
	inUse bool
}

func (s *keptStmt) Close() error {
	s.inUse = false
	return nil
}

func (s *keptStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *keptStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
