package sim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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
// a millisecond).
const busyTimeout = time.Microsecond

// withDatabaseFault runs do with the database fault k (see
// faultEffect.database) held on its database, then lifts it and, if
// anything was committed to a SQLite file meanwhile, checks the file with
// SQLite's integrity check: whatever the fault refused must have left
// nothing half-written. A step that committed nothing (commitMark tells)
// left the file as it was, since the check reads only
// what is committed: most faulty steps need no check (every busy one that
// works as it should). A fault that is not a database's just runs do. app
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
	var before string
	var err error
	if onSQLite {
		if before, err = e.commitMark(ctx, f.database); err != nil {
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
	after, err := e.commitMark(ctx, f.database)
	if err != nil || after == before {
		return err
	}
	return e.checkIntegrity(ctx, f.database)
}

// commitMark is a mark of what is committed to file: two marks differ if
// another connection committed to it between them. With a lane it is the
// header of the file's wal-index (see walIndex), for a system call;
// otherwise SQLite's data_version on the harness's connection.
func (e *Env) commitMark(ctx context.Context, file string) (string, error) {
	if w := e.lane.walIndexOf(file); w != nil {
		hdr, err := w.header()
		return string(hdr[:]), err
	}
	db, err := e.holder(file)
	if err != nil {
		return "", err
	}
	var v int64
	if err := db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return "", fmt.Errorf("handoff: reading the data version of %s: %w", file, err)
	}
	return strconv.FormatInt(v, 10), nil
}

// server is the harness's own connection to the PostgreSQL server of the
// Env's schema, opened on first use and closed with the Env: another
// client's, as far as the system can tell.
func (e *Env) server() (*sql.DB, error) {
	if e.serverDB != nil {
		return e.serverDB, nil
	}
	db, err := sql.Open("pgx", e.schema.ServerURL())
	if err != nil {
		return nil, fmt.Errorf("handoff: opening a connection of its own to %s: %w", system.Redact(e.schema.ServerURL()), err)
	}
	db.SetMaxOpenConns(1)
	e.serverDB = db
	return db, nil
}

// appTableLocks are the tables of the real design's app database that a
// write of the system takes a lock on, in the mode app-busy locks each
// (see lockTables).
var appTableLocks = []struct {
	mode   string
	tables []string
}{
	{"ACCESS EXCLUSIVE", []string{"approvals"}},
	{"EXCLUSIVE", []string{"outbox", "meta", "audit"}},
}

// lockTables locks the tables of the app database in the Env's schema on
// the harness's connection to the server until the returned func rolls
// back: PostgreSQL's app-busy. The system's Outboxes wait for a lock
// BusyTimeout at most (their lock_timeout), so every write the step makes
// fails with ErrBusy at its first statement that touches a table, as
// SQLite's BEGIN IMMEDIATE fails before the write reads, while a plain
// read of the outbox outside any transaction (a pipelined worker's read
// of when the next row is due) goes through, as a read goes past SQLite's
// write lock. So the approvals are locked ACCESS EXCLUSIVE, which holds
// a repeated approval's plain read (an approval that only reads would
// otherwise commit), and the other tables EXCLUSIVE, which every write
// and every claim (FOR UPDATE) waits for but a plain SELECT does not.
func (e *Env) lockTables(ctx context.Context) (func() error, error) {
	db, err := e.server()
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("handoff: locking the tables of schema %s: %w", e.schema.Name(), err)
	}
	for _, l := range appTableLocks {
		tables := make([]string, len(l.tables))
		for i, t := range l.tables {
			tables[i] = e.schema.Name() + "." + t
		}
		if _, err := tx.ExecContext(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN "+l.mode+" MODE"); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("handoff: locking the tables of schema %s: %w", e.schema.Name(), err)
		}
	}
	return func() error {
		if err := tx.Rollback(); err != nil {
			return fmt.Errorf("handoff: unlocking the tables of schema %s: %w", e.schema.Name(), err)
		}
		return nil
	}, nil
}

// loseCommit arms the commit-lost or commit-reply-lost fault k for the
// step (see hook); the returned func disarms it and returns the error,
// if any, of striking the COMMIT. By then the server holds nothing of
// the connection the fault closed: closing it rolled its transaction
// back (see sessions.Keeper).
func (e *Env) loseCommit(k faults.Kind) func() error {
	e.commitLoss = k
	return func() error {
		e.commitLoss = ""
		return e.commitCut.Disarm()
	}
}

// hook is the Hook of worker's Outbox: next (the crash injector's, or
// nil) at every point and then, on PostgreSQL while a commit fault is
// armed, at PointBeforeCommit, once: it arms the cut of the COMMIT due on
// worker's connection (see faults.CommitCut). commit-lost keeps the
// COMMIT from the server and closes the connection; commit-reply-lost
// has the connection send it and drop the server's reply. Either way the
// Outbox cannot know whether its write committed.
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
		if p == system.PointBeforeCommit && e.commitLoss != "" {
			e.commitCut.Arm(worker, e.commitLoss)
			e.commitLoss = ""
		}
		return nil
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
