package system

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrInvalidInput is returned when an approval's case id or title breaks
	// the rules of the spec, or a receiver is asked to store an empty key or
	// payload. Nothing has been written when it is returned.
	ErrInvalidInput = errors.New("system: invalid input")

	// ErrKeyConflict is returned when an action key is already recorded with
	// a different payload: by RecordApproval for an approval, by CreateTask
	// for a task. Nothing has been written when it is returned.
	ErrKeyConflict = errors.New("system: key conflict")

	// ErrTransient is the error a Receiver wraps when a request failed in a
	// way that may or may not have reached the receiver (a timeout, a dropped
	// connection). DeliverOne keeps the row pending for a retry with the same
	// key, or blocks it once the attempt budget is spent.
	ErrTransient = errors.New("system: transient failure")

	// ErrRejected is the error a Receiver wraps when the receiver refused
	// the request itself, for good (validation, authorization): the row is
	// blocked with last error rejected.
	ErrRejected = errors.New("system: rejected by the receiver")

	// ErrWrongState is returned by an operator action on a row in a state
	// the action does not take; nothing changes.
	ErrWrongState = errors.New("system: the row is not in a state this action takes")

	// ErrRetention is returned by Requeue once the receiver may have
	// forgotten the key: a send could create a second task, so a person
	// must reconcile first. Nothing changes.
	ErrRetention = errors.New("system: the receiver may have forgotten the key")

	// ErrWrongDatabase is returned by Open and OpenCRM when the file is a
	// SQLite database that belongs to something else (for example the CRM's
	// file given as the app's). The file is left as it was.
	ErrWrongDatabase = errors.New("system: not this kind of handoff database")

	// ErrBusy is returned when another process holds the database's write
	// lock for longer than the busy timeout.
	ErrBusy = errors.New("system: database is busy")

	// ErrBatchPanicked is returned to every caller whose write shared a
	// batch (see CommitStats) with a write that panicked: the batch was
	// rolled back and nothing of it was written.
	ErrBatchPanicked = errors.New("system: a write of the same batch panicked; nothing was written")

	// ErrCorrupt is returned when SQLite finds a database file damaged. Stop
	// writing to it; handoff check says what is wrong.
	ErrCorrupt = errors.New("system: database is corrupt")

	// ErrCommitUnknown is returned when the connection to PostgreSQL
	// failed during a COMMIT: the write may or may not have committed. A
	// claim whose commit is unknown sends nothing (its lease, if it
	// committed, runs out); a settle's leaves the attempt counted.
	ErrCommitUnknown = errors.New("system: the commit's outcome is unknown")

	// ErrUnavailable is returned when the PostgreSQL server takes no
	// connection: it has as many clients as it allows (SQLSTATE 53300),
	// is starting or stopping (57P03, 57P01), or does not answer. Open
	// waits out the first two for Options.ConnectWait before it returns
	// it; a failure of the environment, not of the handoff.
	ErrUnavailable = errors.New("system: the database server takes no connection")

	// ErrFull is returned when a write does not fit: the disk is full.
	ErrFull = errors.New("system: database or disk is full")

	// ErrReadOnly is returned when a database that must be written is
	// read-only: the file, its -wal or -shm file, or its folder. It is
	// returned before SQLite has created or changed anything.
	ErrReadOnly = errors.New("system: database is read-only")

	// ErrNotFound is returned when a database that must exist does not,
	// and by operations on an action key that has no outbox row.
	ErrNotFound = errors.New("system: not found")

	// ErrOldSchema is returned by the read-only opens for a database that an
	// older handoff wrote: opening it for writing (Open, OpenCRM) upgrades
	// it in place first.
	ErrOldSchema = errors.New("system: database has an older schema")

	// ErrNewerSchema is returned for a database that a newer handoff wrote;
	// this one leaves it as it is.
	ErrNewerSchema = errors.New("system: database has a newer schema")

	// ErrWrongReceiver is returned by BindReceiver when the app database
	// delivers to another receiver than the one given: a CRM file mixed up
	// with another, whose task ids would name other tasks.
	ErrWrongReceiver = errors.New("system: app database delivers to another CRM")
)

// ErrBadPath is matched (errors.Is) by the error CheckPath returns for
// a database path or URL that names no database: empty, in memory, a
// URI, a mistyped URL, a folder. The error is ErrInvalidInput too. A
// command line calls it a usage error.
var ErrBadPath = errors.New("system: not a database path")

// pathError is a refused database path: ErrInvalidInput and ErrBadPath.
type pathError string

func (e pathError) Error() string        { return ErrInvalidInput.Error() + ": " + string(e) }
func (e pathError) Is(target error) bool { return target == ErrInvalidInput || target == ErrBadPath }

// badPath returns a pathError that says what is wrong.
func badPath(format string, args ...any) error { return pathError(fmt.Sprintf(format, args...)) }

// invalid returns an ErrInvalidInput error that says what is wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}

// driverError is the one place that maps errors of the SQLite and
// PostgreSQL drivers to the errors of this package: a failure a caller
// can act on (busy, full, read-only, corrupt) becomes a *DatabaseError
// of that class, which says the same on both; what it does not recognise
// passes through unchanged, wrapped with what was being done.
func driverError(doing string, err error) error {
	if err == nil {
		return nil
	}
	if class := driverClass(err); class != nil {
		return &DatabaseError{Class: class, Doing: doing, Err: err}
	}
	return fmt.Errorf("system: %s: %w", doing, err)
}

// Class returns the class of the database failure that err carries,
// from this package or from a driver: ErrBusy, ErrCorrupt, ErrFull,
// ErrReadOnly or ErrUnavailable; nil when it is none of them.
func Class(err error) error {
	for _, class := range []error{ErrBusy, ErrCorrupt, ErrFull, ErrReadOnly, ErrUnavailable} {
		if errors.Is(err, class) {
			return class
		}
	}
	return driverClass(err)
}

// driverClass is the class of a driver's error (ErrBusy …), or nil.
func driverClass(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		if se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
			// The shared-memory file of a WAL database could not grow:
			// the disk under it is full.
			return ErrFull
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return ErrBusy
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return ErrCorrupt
		case sqlite3.SQLITE_FULL:
			return ErrFull
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
			return ErrReadOnly
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "55P03", "40P01": // lock_not_available (lock_timeout), deadlock_detected
			return ErrBusy
		case "XX001", "XX002": // data_corrupted, index_corrupted
			return ErrCorrupt
		case "53100": // disk_full
			return ErrFull
		case "25006", "42501": // read_only_sql_transaction, insufficient_privilege
			return ErrReadOnly
		case "53300", "57P03", "57P01": // too_many_connections, cannot_connect_now, admin_shutdown
			return ErrUnavailable
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return ErrFull
	}
	if errors.Is(err, syscall.ECONNREFUSED) || connectionLost(err) {
		return ErrUnavailable
	}
	return nil
}

// connectionLost reports whether err says the connection to the server
// ended under a statement: reset, closed, or cut before a whole answer.
// The server rolled back whatever was not committed.
func connectionLost(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true // the connection was closed before the statement left
	}
	for _, lost := range []error{syscall.ECONNRESET, net.ErrClosed, io.EOF, io.ErrUnexpectedEOF, driver.ErrBadConn} {
		if errors.Is(err, lost) {
			return true
		}
	}
	return false
}

// waitable reports whether a connection that failed with err is worth
// trying again: the server is full, starting, or dropped the connection
// while it started. A server that refuses to be connected to is not
// running, and one that rejects the credentials will go on doing so.
func waitable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "53300" || pe.Code == "57P03"
	}
	return errors.Is(err, syscall.ECONNRESET)
}

// DatabaseError is a failure of the database that a caller can act on,
// of one class (ErrBusy, ErrFull, ErrReadOnly, ErrCorrupt, or
// ErrCommitUnknown): its message names the class and what was being
// done, the same on SQLite and PostgreSQL; the driver's own error is Err.
type DatabaseError struct {
	Class error
	Doing string
	Err   error
}

func (e *DatabaseError) Error() string { return e.Class.Error() + ": " + e.Doing }

// Unwrap returns the class and the driver's error.
func (e *DatabaseError) Unwrap() []error { return []error{e.Class, e.Err} }

// localCause names, for a row's last error, a failure on this side that
// made the outcome of an attempt unknown: "local: " and a short cause.
func localCause(err error) string {
	for _, c := range []struct {
		err  error
		says string
	}{
		{ErrBusy, "database is busy"},
		{ErrFull, "disk is full"},
		{ErrReadOnly, "database is read-only"},
		{ErrCorrupt, "database is corrupt"},
		{ErrCommitUnknown, "commit outcome unknown"},
		{ErrUnavailable, "database server unavailable"},
		{context.Canceled, "interrupted"},
		{context.DeadlineExceeded, "timed out"},
	} {
		if errors.Is(err, c.err) {
			return LastErrorLocalPrefix + c.says
		}
	}
	return LastErrorLocalPrefix + "unexpected error"
}

// AttemptError is returned by DeliverOne for a failure after the attempt
// was counted and committed: the budget is spent by one, and the row stays
// pending (the spec's budget rules apply to it as to any attempt). The request
// was sent, so the CRM may have created the task; the retry with the same
// key finds it.
type AttemptError struct {
	Key         string
	Attempt     int
	MaxAttempts int
	Err         error
}

func (e *AttemptError) Error() string {
	return fmt.Sprintf("%s: attempt %d of %d counted; the CRM may have acted: %v", e.Key, e.Attempt, e.MaxAttempts, e.Err)
}

// Unwrap returns the cause.
func (e *AttemptError) Unwrap() error { return e.Err }
