package system

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrInvalidInput is returned when an approval's case id or title breaks
	// the rules of SPEC, or a receiver is asked to store an empty key or
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

	// ErrWrongDatabase is returned by Open and OpenCRM when the file is a
	// SQLite database that belongs to something else (for example the CRM's
	// file given as the app's). The file is left as it was.
	ErrWrongDatabase = errors.New("system: not this kind of handoff database")

	// ErrBusy is returned when another process holds the database's write
	// lock for longer than the busy timeout.
	ErrBusy = errors.New("system: database is busy")
)

// invalid returns an ErrInvalidInput error that says what is wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}

// driverError is the one place that maps errors of the SQLite driver to the
// errors of this package; what it does not recognise passes through
// unchanged, wrapped with what was being done.
func driverError(doing string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %s: %v", ErrBusy, doing, err)
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %s: %v", ErrWrongDatabase, doing, err)
		}
	}
	return fmt.Errorf("system: %s: %w", doing, err)
}
