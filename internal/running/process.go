package running

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// ErrCrashed is what a process's connections, dials and requests fail
// with once it crashed: nothing it does after reaches the database or
// the receiver.
var ErrCrashed = errors.New("running: the process crashed")

// errReset is what a connection fails with once the harness cut it.
var errReset = errors.New("running: the connection was reset")

// process is one boot of a running design: every connection it made, so
// that a crash cuts them all at once, and its generation's receiver.
type process struct {
	watch    *watchdog
	gen      int
	replica  int // which of the schedule's processes, from 1
	backend  string
	database string
	receiver *Receiver

	crashed  chan struct{} // closed at the crash
	stopping chan struct{} // closed when the harness stops the process
	stopOnce sync.Once

	mu      sync.Mutex
	dead    bool
	conns   map[cuttable]struct{}
	loseOne bool // the next commit's reply is lost
}

// cuttable is a connection the harness can cut.
type cuttable interface{ cut(err error) }

var _ designs.Process = (*process)(nil)

func (p *process) Backend() string     { return p.backend }
func (p *process) Replica() int        { return p.replica }
func (p *process) ReceiverURL() string { return ReceiverURL }

// HTTPClient is a client whose requests reach the harness's receiver
// over HTTP, in memory, as the named worker's ("" for none). It follows
// no redirects and has no timeout of its own: the caller's context, or
// a Timeout set on it, bounds a request.
func (p *process) HTTPClient(worker string) *http.Client {
	return &http.Client{
		Transport:     httpReceiver{p: p, worker: worker},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
func (p *process) Database() string { return p.database }

// Receiver is the harness's receiver as this process reaches it: a
// request of a process that crashed never leaves.
func (p *process) Receiver() system.Receiver { return generationReceiver{p: p} }

// ReceiverFor is Receiver for the named worker's requests.
func (p *process) ReceiverFor(worker string) system.Receiver {
	return generationReceiver{p: p, worker: worker}
}

type generationReceiver struct {
	p      *process
	worker string
}

func (g generationReceiver) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return g.p.receiver.create(ctx, g.p, g.worker, key, payload)
}

// stop says the harness is stopping the process: a request it holds
// goes on at once.
func (p *process) stop() { p.stopOnce.Do(func() { close(p.stopping) }) }

// alive reports whether the process has not crashed.
func (p *process) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead
}

// track adds c to the process's connections, or refuses it when the
// process crashed.
func (p *process) track(c cuttable) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return ErrCrashed
	}
	p.conns[c] = struct{}{}
	return nil
}

func (p *process) untrack(c cuttable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// crash cuts every connection of the process, refuses its new ones, and
// drops its requests from now on.
func (p *process) crash() {
	p.mu.Lock()
	if !p.dead {
		close(p.crashed)
	}
	p.dead = true
	conns := p.conns
	p.conns = map[cuttable]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.cut(ErrCrashed)
	}
}

// reset cuts every connection of the process, which lives on: its next
// statements need new ones. It returns how many it cut.
func (p *process) reset() int {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[cuttable]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.cut(errReset)
	}
	return len(conns)
}

// loseCommitReply has the next commit of the process carried out and
// its reply lost.
func (p *process) loseCommitReply() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseOne = true
}

// takeCommit reports whether this commit's reply is to be lost.
func (p *process) takeCommit() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	lose := p.loseOne
	p.loseOne = false
	return lose
}

// Dial connects to PostgreSQL over TCP, a connection the harness can cut.
func (p *process) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if !p.alive() {
		return nil, ErrCrashed
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &netConn{Conn: conn, p: p}
	if err := p.track(c); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// netConn is a connection to PostgreSQL that the harness can cut, and
// whose COMMIT's reply it can lose.
type netConn struct {
	net.Conn
	p       *process
	failed  atomic.Pointer[error]
	reading atomic.Bool // a read waits for the server
}

// cutWaiting closes, from outside the bubble, every connection of the
// process whose read waits for the server, and says how many it closed.
func (p *process) cutWaiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if nc, ok := c.(*netConn); ok && nc.reading.Load() {
			nc.Conn.Close()
			n++
		}
	}
	return n
}

// cut closes the socket: what reads and writes then fail with is what a
// socket closed under them fails with, but after a crash, when they fail
// with ErrCrashed.
func (c *netConn) cut(err error) {
	if err == ErrCrashed {
		c.failed.CompareAndSwap(nil, &err)
	}
	c.Conn.Close()
}

func (c *netConn) fail() error {
	if err := c.failed.Load(); err != nil {
		return *err
	}
	return nil
}

func (c *netConn) Write(b []byte) (int, error) {
	if err := c.fail(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(b)
	c.p.watch.moved()
	if err == nil && faults.IsCommitQuery(b) && c.p.takeCommit() {
		c.p.untrack(c)
		c.cut(nil)
	}
	return n, err
}

func (c *netConn) Read(b []byte) (int, error) {
	if err := c.fail(); err != nil {
		return 0, err
	}
	c.reading.Store(true)
	n, err := c.Conn.Read(b)
	c.reading.Store(false)
	c.p.watch.moved()
	if ferr := c.fail(); ferr != nil {
		return 0, ferr
	}
	return n, err
}

func (c *netConn) Close() error {
	c.p.untrack(c)
	return c.Conn.Close()
}

// WrapSQLite wraps the connector of a database/sql handle on SQLite: its
// connections are the process's, cut at a crash or a reset.
func (p *process) WrapSQLite(c driver.Connector) driver.Connector {
	return sqlConnector{Connector: c, p: p}
}

type sqlConnector struct {
	driver.Connector
	p *process
}

// Process names the boot the connections belong to
// (system.ProcessConnector): its handles commit together, never with
// another process's.
func (s sqlConnector) Process() string {
	return fmt.Sprintf("replica %d boot %d", s.p.replica, s.p.gen)
}

var _ system.ProcessConnector = sqlConnector{}

func (s sqlConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if !s.p.alive() {
		return nil, ErrCrashed
	}
	conn, err := s.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &sqlConn{conn: conn, p: s.p, mu: make(connLock, 1)}
	if err := s.p.track(c); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// sqlConn is a connection to SQLite the harness can cut. Every call
// holds its lock; a cut closes the connection (an open transaction rolls
// back) at once if no call is under way, else when that call returns.
type sqlConn struct {
	mu   connLock
	conn driver.Conn
	p    *process
	// cutAt is set by a cut at once, without the lock, so that no call
	// that begins after it runs, whichever goroutine takes the lock next.
	cutAt  atomic.Bool
	failed error // set by a cut, under the lock
	closed bool
	// What is open on the connection: SQLite closes a connection that
	// has a statement unfinalized only once it is, so a cut closes every
	// set of rows, rolls back, and closes every statement first, in that
	// order (rows read through a statement must close before it).
	tx    driver.Tx
	rows  map[driver.Rows]struct{}
	stmts map[driver.Stmt]struct{}
}

// connLock is a mutex whose waiters are durably blocked in a synctest
// bubble: a cut waiting for a call on the connection must not stop
// virtual time, for the call may itself wait on it (SQLite's busy
// handler sleeps while another process holds the file's lock). A
// sync.Mutex's waiter is not durably blocked; a channel's is.
type connLock chan struct{}

func (l connLock) Lock()   { l <- struct{}{} }
func (l connLock) Unlock() { <-l }

// TryLock takes the lock if it is free, and reports whether it did.
func (l connLock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// do runs f on the connection unless it was cut.
func (c *sqlConn) do(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil || c.cutAt.Load() {
		return driver.ErrBadConn
	}
	defer c.p.watch.moved()
	return f()
}

func (c *sqlConn) cut(err error) {
	c.cutAt.Store(true)
	if !c.mu.TryLock() {
		// A call is under way: it may finish, as if the cut came just
		// after it; the next one fails. The connection closes then.
		go func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cutLocked(err)
		}()
		return
	}
	defer c.mu.Unlock()
	c.cutLocked(err)
}

func (c *sqlConn) cutLocked(err error) {
	if c.failed == nil {
		c.failed = err
	}
	if !c.closed {
		c.closeLocked()
	}
}

// closeLocked rolls back the open transaction, closes every open
// statement and set of rows, then the connection.
func (c *sqlConn) closeLocked() error {
	c.closed = true
	for r := range c.rows {
		r.Close()
	}
	if c.tx != nil {
		c.tx.Rollback()
		c.tx = nil
	}
	for st := range c.stmts {
		st.Close()
	}
	c.rows, c.stmts = nil, nil
	return c.conn.Close()
}

// openedRows records rows as open on the connection; c.mu is held.
func (c *sqlConn) openedRows(r driver.Rows) {
	if c.rows == nil {
		c.rows = map[driver.Rows]struct{}{}
	}
	c.rows[r] = struct{}{}
}

// openedStmt records st as open on the connection; c.mu is held.
func (c *sqlConn) openedStmt(st driver.Stmt) {
	if c.stmts == nil {
		c.stmts = map[driver.Stmt]struct{}{}
	}
	c.stmts[st] = struct{}{}
}

func (c *sqlConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *sqlConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	err := c.do(func() (err error) {
		if pc, ok := c.conn.(driver.ConnPrepareContext); ok {
			st, err = pc.PrepareContext(ctx, query)
		} else {
			st, err = c.conn.Prepare(query)
		}
		if err == nil {
			c.openedStmt(st)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sqlStmt{st: st, c: c}, nil
}

func (c *sqlConn) Close() error {
	c.p.untrack(c)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.closeLocked()
}

func (c *sqlConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *sqlConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	err := c.do(func() (err error) {
		if bc, ok := c.conn.(driver.ConnBeginTx); ok {
			tx, err = bc.BeginTx(ctx, opts)
		} else {
			tx, err = c.conn.Begin() //nolint:staticcheck // the driver has no BeginTx
		}
		if err == nil {
			c.tx = tx
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sqlTx{tx: tx, c: c}, nil
}

func (c *sqlConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.conn.(driver.ExecerContext)
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

func (c *sqlConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	var r driver.Rows
	err := c.do(func() (err error) {
		r, err = qc.QueryContext(ctx, query, args)
		if err == nil {
			c.openedRows(r)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sqlRows{rows: r, c: c}, nil
}

func (c *sqlConn) ResetSession(ctx context.Context) error {
	return c.do(func() error {
		if r, ok := c.conn.(driver.SessionResetter); ok {
			return r.ResetSession(ctx)
		}
		return nil
	})
}

func (c *sqlConn) IsValid() bool {
	return !c.cutAt.Load()
}

type sqlTx struct {
	tx driver.Tx
	c  *sqlConn
}

// Commit commits, unless the connection was cut.
func (t *sqlTx) Commit() error {
	return t.c.do(func() error {
		t.c.tx = nil
		return t.tx.Commit()
	})
}

func (t *sqlTx) Rollback() error {
	return t.c.do(func() error {
		t.c.tx = nil
		return t.tx.Rollback()
	})
}

type sqlStmt struct {
	st driver.Stmt
	c  *sqlConn
}

func (s *sqlStmt) Close() error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.closed {
		return nil
	}
	delete(s.c.stmts, s.st)
	return s.st.Close()
}

func (s *sqlStmt) NumInput() int { return s.st.NumInput() }

func (s *sqlStmt) Exec(args []driver.Value) (driver.Result, error) {
	var r driver.Result
	err := s.c.do(func() (err error) {
		r, err = s.st.Exec(args) //nolint:staticcheck // the driver's own fallback
		return err
	})
	return r, err
}

func (s *sqlStmt) Query(args []driver.Value) (driver.Rows, error) {
	var r driver.Rows
	err := s.c.do(func() (err error) {
		r, err = s.st.Query(args) //nolint:staticcheck // the driver's own fallback
		if err == nil {
			s.c.openedRows(r)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sqlRows{rows: r, c: s.c}, nil
}

func (s *sqlStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	sc, ok := s.st.(driver.StmtExecContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	var r driver.Result
	err := s.c.do(func() (err error) {
		r, err = sc.ExecContext(ctx, args)
		return err
	})
	return r, err
}

func (s *sqlStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	sc, ok := s.st.(driver.StmtQueryContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	var r driver.Rows
	err := s.c.do(func() (err error) {
		r, err = sc.QueryContext(ctx, args)
		if err == nil {
			s.c.openedRows(r)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sqlRows{rows: r, c: s.c}, nil
}

type sqlRows struct {
	rows driver.Rows
	c    *sqlConn
}

func (r *sqlRows) Columns() []string { return r.rows.Columns() }

func (r *sqlRows) Close() error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.c.closed {
		return nil
	}
	delete(r.c.rows, r.rows)
	return r.rows.Close()
}

func (r *sqlRows) Next(dest []driver.Value) error {
	return r.c.do(func() error { return r.rows.Next(dest) })
}
