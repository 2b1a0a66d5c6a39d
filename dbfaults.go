package handoff

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// The files of an Env's databases.
const (
	appFile = "app.db"
	crmFile = "crm.db"
)

// busyTimeout is how long the system's writes wait for another
// connection's write lock in the simulation: only a busy fault holds one
// (the handles of one process commit their writes one batch at a time),
// and it holds it for the whole step, so waiting would change nothing. A
// busy step's write fails at once: on SQLite, which counts whole
// milliseconds, a timeout under one waits for nothing (PostgreSQL waits
// a millisecond), where waiting a millisecond cost a quarter of an
// exploration's time.
const busyTimeout = time.Microsecond

// withDatabaseFault runs do with the database fault k (see
// faultEffect.database) held on its database, then lifts it and, if
// anything was committed to a SQLite file meanwhile, checks the file with
// SQLite's integrity check: whatever the fault refused must have left
// nothing half-written. A step that committed nothing (SQLite's
// data_version tells) left the file as it was, since the check reads only
// what is committed: most faulty steps need no check (every busy one that
// works as it should), and checking them all cost a fifteenth of an
// exploration's time. A fault that is not a database's just runs do. app
// is the handle the step writes the app database through.
//
// Busy: another connection of the harness's, its own handle on the file,
// holds the write lock (BEGIN IMMEDIATE) while do runs; on PostgreSQL the
// harness's connection to the server locks the app database's tables (see
// lockTables). Full: the connection that writes the file (app's, or the
// receiver's) is pinned at the file's size (PRAGMA max_page_count, which
// SQLite keeps per connection), and given its limit back after. Commit
// lost: the first COMMIT an Outbox of the Env is about to send while do
// runs finds its connection ended; commit reply lost: it commits and its
// reply is lost (see hook).
func (e *Env) withDatabaseFault(ctx context.Context, k faults.Kind, app any, do func()) error {
	f := faultTable[k]
	if f.database == "" {
		do()
		return nil
	}
	onSQLite := f.database != appFile || e.schema == nil // the app database on PostgreSQL is no file
	var before int64
	var err error
	if onSQLite {
		if before, err = e.dataVersion(ctx, f.database); err != nil {
			return err
		}
	}
	var lift func() error
	switch {
	case k == faults.CommitLost || k == faults.CommitReplyLost:
		lift = e.loseCommit(k)
	case k == faults.AppBusy && e.schema != nil:
		lift, err = e.lockTables(ctx)
	case k == faults.AppBusy || k == faults.CRMBusy:
		lift, err = e.holdWriteLock(ctx, f.database)
	default:
		handle := app
		if f.database == crmFile {
			handle = e.crm
			if h, ok := handle.(*httpCRM); ok {
				handle = h.CRM
			}
		}
		lift, err = pinSize(ctx, handle, f.database)
	}
	if err != nil {
		return err
	}
	do()
	if err := lift(); err != nil {
		return err
	}
	if !onSQLite {
		return nil
	}
	after, err := e.dataVersion(ctx, f.database)
	if err != nil || after == before {
		return err
	}
	return e.checkIntegrity(ctx, f.database)
}

// dataVersion reads SQLite's data_version of file on the harness's
// connection: it changes whenever another connection commits to the file.
func (e *Env) dataVersion(ctx context.Context, file string) (int64, error) {
	db, err := e.holder(file)
	if err != nil {
		return 0, err
	}
	var v int64
	if err := db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("handoff: reading the data version of %s: %w", file, err)
	}
	return v, nil
}

// server is the harness's own connection to the PostgreSQL server of the
// Env's schema, opened on first use and closed with the Env: another
// client's, as far as the system can tell.
func (e *Env) server() (*sql.DB, error) {
	if e.serverDB != nil {
		return e.serverDB, nil
	}
	db, err := sql.Open("pgx", e.schema.server)
	if err != nil {
		return nil, fmt.Errorf("handoff: opening a connection of its own to %s: %w", system.Redact(e.schema.server), err)
	}
	db.SetMaxOpenConns(1)
	e.serverDB = db
	return db, nil
}

// appTables are the tables of the real design's app database that a
// write of the system takes a lock on.
var appTables = []string{"approvals", "outbox", "meta", "audit"}

// lockTables locks the tables of the app database in the Env's schema on
// the harness's connection to the server until the returned func rolls
// back: PostgreSQL's app-busy. The system's Outboxes wait for a lock
// BusyTimeout at most (their lock_timeout), so every write the step makes
// fails with ErrBusy at its first statement that touches a table, as
// SQLite's BEGIN IMMEDIATE fails before the write reads. The lock is
// ACCESS EXCLUSIVE: an EXCLUSIVE one would let a write's plain SELECT
// through, and a repeated approval, which only reads, commit.
func (e *Env) lockTables(ctx context.Context) (func() error, error) {
	db, err := e.server()
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("handoff: locking the tables of schema %s: %w", e.schema.name, err)
	}
	tables := make([]string, len(appTables))
	for i, t := range appTables {
		tables[i] = e.schema.name + "." + t
	}
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("handoff: locking the tables of schema %s: %w", e.schema.name, err)
	}
	return func() error {
		if err := tx.Rollback(); err != nil {
			return fmt.Errorf("handoff: unlocking the tables of schema %s: %w", e.schema.name, err)
		}
		return nil
	}, nil
}

// commitLoss is a commit-lost or commit-reply-lost fault while its step
// runs: armed until it strikes a COMMIT, and what striking it failed of,
// if anything.
type commitLoss struct {
	kind faults.Kind // "" once it struck, or when none is armed
	err  error
}

// loseCommit arms the commit-lost or commit-reply-lost fault k for the
// step; the returned func disarms it and returns the error, if any, of
// ending the connection or of losing the reply.
func (e *Env) loseCommit(k faults.Kind) func() error {
	e.commitLoss = commitLoss{kind: k}
	return func() error {
		err := errors.Join(e.commitLoss.err, e.replyCut.disarm())
		e.commitLoss = commitLoss{}
		return err
	}
}

// hook is the Hook of worker's Outbox: next (the crash injector's, or
// nil) at every point and then, on PostgreSQL while a commit fault is
// armed, at PointBeforeCommit, once: commit-lost ends the connection whose
// COMMIT is due, which then never reaches the server; commit-reply-lost
// has the connection send it and drop the server's reply (see cutConn).
// Either way the Outbox cannot know whether its write committed.
func (e *Env) hook(worker string, next system.Hook) system.Hook {
	if e.schema == nil {
		return next // SQLite passes no PointBeforeCommit
	}
	return func(p system.FaultPoint) error {
		if next != nil {
			if err := next(p); err != nil {
				return err // a crash: no COMMIT follows
			}
		}
		if p == system.PointBeforeCommit {
			switch e.commitLoss.kind {
			case faults.CommitLost:
				e.commitLoss.err = e.endTransaction(worker)
			case faults.CommitReplyLost:
				e.replyCut.arm(worker)
			}
			e.commitLoss.kind = ""
		}
		return nil
	}
}

// replyCut loses the reply to one COMMIT. Armed for a worker at its
// before-commit point, the next COMMIT that one of the worker's
// connections sends goes to the server, and the connection reads the
// server's reply, drops it and closes: the Outbox hears its connection
// fail after the write committed.
type replyCut struct {
	mu     sync.Mutex
	worker string // the worker whose next COMMIT loses its reply; "" when none
	done   bool   // the reply was dropped
	tag    string // what the server answered the COMMIT, or its error
}

// arm has worker's next COMMIT lose its reply.
func (c *replyCut) arm(worker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker, c.done, c.tag = worker, false, ""
}

// take reports whether the COMMIT worker sends now is the one to lose its
// reply; the cut is spent.
func (c *replyCut) take(worker string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.worker != worker || c.done {
		return false
	}
	c.done = true
	return true
}

// dropped records what the server answered the COMMIT whose reply was
// dropped.
func (c *replyCut) dropped(tag string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tag = tag
}

// disarm ends the cut, and returns an error when it was armed but did not
// do what the model predicts: a COMMIT sent and committed, its reply
// lost.
func (c *replyCut) disarm() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	worker, done, tag := c.worker, c.done, c.tag
	c.worker, c.done, c.tag = "", false, ""
	switch {
	case worker == "":
		return nil
	case !done:
		return fmt.Errorf("handoff: worker %s sent no COMMIT after its before-commit point: no reply to lose", worker)
	case tag != "COMMIT":
		return fmt.Errorf("handoff: the server answered worker %s's COMMIT, whose reply was lost, with %q: it did not commit", worker, tag)
	}
	return nil
}

// wrapConn is the WrapConn of worker's Outbox on PostgreSQL: its
// connections are cutConns.
func (e *Env) wrapConn(worker string) func(net.Conn) net.Conn {
	return func(conn net.Conn) net.Conn { return &cutConn{Conn: conn, cut: &e.replyCut, worker: worker} }
}

// commitQuery is the message pgx sends to commit a transaction: a simple
// Query ('Q', its length, "commit" and a NUL).
var commitQuery = append([]byte{'Q', 0, 0, 0, 11}, "commit\x00"...)

// errReplyCut is what a cutConn's read fails with once it dropped a
// COMMIT's reply.
var errReplyCut = errors.New("handoff: the connection died before the COMMIT's reply (commit-reply-lost)")

// cutConn is a connection of an Outbox to the server that can lose the
// reply to a COMMIT it sends (see replyCut).
type cutConn struct {
	net.Conn
	cut      *replyCut
	worker   string
	dropping atomic.Bool // it sent the COMMIT whose reply it drops
}

func (c *cutConn) Write(b []byte) (int, error) {
	if bytes.Equal(b, commitQuery) && c.cut.take(c.worker) {
		c.dropping.Store(true)
	}
	return c.Conn.Write(b)
}

// Read reads from the server; after the COMMIT whose reply it drops, it
// reads that reply up to the server's ReadyForQuery, records its command
// tag, closes the connection and fails. pgx may read from another
// goroutine while it writes: a read that was waiting when the COMMIT went
// out holds the start of the reply.
func (c *cutConn) Read(b []byte) (int, error) {
	if !c.dropping.Load() {
		n, err := c.Conn.Read(b)
		if n == 0 || !c.dropping.Load() {
			return n, err
		}
		return 0, c.drop(io.MultiReader(bytes.NewReader(slices.Clone(b[:n])), c.Conn))
	}
	return 0, c.drop(c.Conn)
}

// drop reads the COMMIT's reply from r, records its tag, closes the
// connection and returns the error its reader gets.
func (c *cutConn) drop(r io.Reader) error {
	c.dropping.Store(false)
	tag, err := readReply(r)
	if err != nil {
		tag = "a failed read: " + err.Error()
	}
	c.cut.dropped(tag)
	c.Conn.Close()
	return errReplyCut
}

// readReply reads the server's messages up to its ReadyForQuery ('Z')
// and returns the command tag of its CommandComplete ('C'), or "error"
// for an ErrorResponse ('E').
func readReply(r io.Reader) (string, error) {
	tag := ""
	for {
		var head [5]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return "", err
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n < 4 || n > 1<<20 {
			return "", fmt.Errorf("a message %q of length %d", head[0], n)
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return "", err
		}
		switch head[0] {
		case 'C':
			tag = string(bytes.TrimRight(body, "\x00"))
		case 'E':
			tag = "error"
		case 'Z':
			return tag, nil
		}
	}
}

// sqlEndTransaction ends the server connections named $1 that are idle
// in a transaction holding a lock in schema $2, and returns their process
// ids. The schema tells apart the Envs whose workers have the same names;
// the CTE is materialised so that no connection but those is ever ended.
const sqlEndTransaction = `WITH doomed AS MATERIALIZED (
		SELECT a.pid FROM pg_stat_activity a
		WHERE a.application_name = $1 AND a.state = 'idle in transaction'
		AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE l.pid = a.pid AND c.relnamespace = $2::regnamespace))
	SELECT pid FROM doomed WHERE pg_terminate_backend(pid)`

// sqlAlive says whether the server process $1 still runs.
const sqlAlive = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`

// endWait is how long endTransaction waits for an ended connection's
// process to be gone: until then it could still read the COMMIT.
// PostgreSQL's own wait (pg_terminate_backend with a timeout) looks every
// 100 ms; this looks every millisecond.
const endWait = 10 * time.Second

// endTransaction ends, from the harness's connection to the server, the
// connection of worker's Outbox whose transaction waits for its COMMIT:
// the system names its connections "handoff " and the worker.
func (e *Env) endTransaction(worker string) error {
	db, err := e.server()
	if err != nil {
		return err
	}
	ctx := context.Background()
	pids, err := queryColumn[int64](ctx, db, sqlEndTransaction, "handoff "+worker, e.schema.name)
	if err != nil {
		return fmt.Errorf("handoff: ending the connection of worker %s: %w", worker, err)
	}
	if len(pids) != 1 {
		return fmt.Errorf("handoff: ended %d connections of worker %s with a transaction in schema %s, want the one whose COMMIT is due", len(pids), worker, e.schema.name)
	}
	for deadline := time.Now().Add(endWait); ; time.Sleep(time.Millisecond) {
		var alive bool
		if err := db.QueryRowContext(ctx, sqlAlive, pids[0]).Scan(&alive); err != nil {
			return fmt.Errorf("handoff: waiting for the end of worker %s's connection: %w", worker, err)
		}
		switch {
		case !alive:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("handoff: worker %s's connection (process %d) still runs %v after it was ended", worker, pids[0], endWait)
		}
	}
}

// holder is the harness's own connection on file, opened on first use:
// another process's, as far as the system can tell.
func (e *Env) holder(file string) (*sql.DB, error) {
	if db, ok := e.holders[file]; ok {
		return db, nil
	}
	db, err := sql.Open("sqlite", filepath.Join(e.cfg.Dir, file)+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("handoff: opening a connection of its own on %s: %w", file, err)
	}
	db.SetMaxOpenConns(1)
	if e.holders == nil {
		e.holders = map[string]*sql.DB{}
	}
	e.holders[file] = db
	return db, nil
}

// holdWriteLock takes file's write lock on the harness's connection; the
// returned func releases it.
func (e *Env) holdWriteLock(ctx context.Context, file string) (func() error, error) {
	db, err := e.holder(file)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("handoff: taking the write lock of %s: %w", file, err)
	}
	return func() error {
		if err := tx.Rollback(); err != nil {
			return fmt.Errorf("handoff: releasing the write lock of %s: %w", file, err)
		}
		return nil
	}, nil
}

// pinSize pins the connection of handle, which must have one (a DB
// method, as system's Outbox and CRM have), at the file's size; the
// returned func gives it its limit back.
func pinSize(ctx context.Context, handle any, file string) (func() error, error) {
	h, ok := handle.(interface{ DB() *sql.DB })
	if !ok {
		return nil, fmt.Errorf("%w: %s's handle (%T) has no connection to pin at its size", ErrScenario, file, handle)
	}
	db := h.DB()
	var limit, pinned int64
	if err := db.QueryRowContext(ctx, "PRAGMA max_page_count").Scan(&limit); err != nil {
		return nil, fmt.Errorf("handoff: reading the page limit of %s: %w", file, err)
	}
	// SQLite never sets the limit below the file's size: 1 pins it there.
	if err := db.QueryRowContext(ctx, "PRAGMA max_page_count = 1").Scan(&pinned); err != nil {
		return nil, fmt.Errorf("handoff: pinning %s at its size: %w", file, err)
	}
	return func() error {
		if err := db.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", limit)).Scan(&pinned); err != nil || pinned != limit {
			return fmt.Errorf("handoff: giving %s its page limit %d back: got %d, %v", file, limit, pinned, err)
		}
		return nil
	}, nil
}

// checkIntegrity runs SQLite's integrity check of file on the harness's
// connection and returns an error when it reports anything.
func (e *Env) checkIntegrity(ctx context.Context, file string) error {
	db, err := e.holder(file)
	if err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("handoff: checking %s: %w", file, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("handoff: checking %s: %w", file, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("handoff: checking %s: %w", file, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("handoff: %s fails SQLite's integrity check after a fault: %s", file, strings.Join(problems, "; "))
	}
	return nil
}

// closeHolders closes the harness's own connections, on the files and
// to the server.
func (e *Env) closeHolders() error {
	var err error
	for file, db := range e.holders {
		err = errors.Join(err, db.Close())
		delete(e.holders, file)
	}
	if e.serverDB != nil {
		err = errors.Join(err, e.serverDB.Close())
		e.serverDB = nil
	}
	return err
}
