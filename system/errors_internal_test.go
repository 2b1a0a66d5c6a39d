package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestLockedIsBusy: SQLITE_LOCKED, a table in use by the same
// connection, is ErrBusy as SQLITE_BUSY is: the write may go through
// once the other statement is done.
func TestLockedIsBusy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "locked.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT a FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	_, err = conn.ExecContext(ctx, "DROP TABLE t")
	rows.Close()
	if got := driverError("dropping t", err); !errors.Is(got, ErrBusy) {
		t.Errorf("dropping a table a query reads: got %v, want ErrBusy", got)
	}
}

// TestPostgresErrorClasses: every PostgreSQL error code the package
// classes is of its class, wrapped or not; another code is of none.
func TestPostgresErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code string
		want error
	}{
		{"55P03", ErrBusy}, // lock_not_available
		{"40P01", ErrBusy}, // deadlock_detected
		{"XX001", ErrCorrupt},
		{"XX002", ErrCorrupt},
		{"53100", ErrFull},
		{"25006", ErrReadOnly},
		{"42501", ErrReadOnly},
		{"23505", nil}, // unique_violation: not a class a caller acts on
	} {
		err := fmt.Errorf("committing: %w", &pgconn.PgError{Code: tt.code})
		if got := driverClass(err); got != tt.want {
			t.Errorf("code %s: class %v, want %v", tt.code, got, tt.want)
		}
		if got := driverError("writing", err); tt.want != nil && !errors.Is(got, tt.want) {
			t.Errorf("code %s: driverError gives %v, want one of class %v", tt.code, got, tt.want)
		}
	}
}

// TestLocalCauses: the cause a row records for a failure on this side
// names its class, through any wrapping.
func TestLocalCauses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&DatabaseError{Class: ErrBusy, Doing: "recording"}, "local: database is busy"},
		{&DatabaseError{Class: ErrFull, Doing: "recording"}, "local: disk is full"},
		{&DatabaseError{Class: ErrReadOnly, Doing: "recording"}, "local: database is read-only"},
		{&DatabaseError{Class: ErrCorrupt, Doing: "recording"}, "local: database is corrupt"},
		{fmt.Errorf("settling: %w", ErrCommitUnknown), "local: commit outcome unknown"},
		{fmt.Errorf("sending: %w", context.Canceled), "local: interrupted"},
		{fmt.Errorf("sending: %w", context.DeadlineExceeded), "local: timed out"},
		{errors.New("something else"), "local: unexpected error"},
	} {
		if got := localCause(tt.err); got != tt.want {
			t.Errorf("localCause(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestClassOfThePackagesOwnErrors: Class names the class of an error
// that wraps one of the package's class errors with no driver's error
// inside, as well as of a driver's error: the harness tells a failure of
// its environment by it (ErrUnavailable, ErrFull); an error of no class
// has none.
func TestClassOfThePackagesOwnErrors(t *testing.T) {
	t.Parallel()
	for _, class := range []error{ErrBusy, ErrCorrupt, ErrFull, ErrReadOnly, ErrUnavailable} {
		if got := Class(fmt.Errorf("opening the outbox: %w", class)); got != class {
			t.Errorf("Class of a wrapped %v: %v, want it", class, got)
		}
	}
	for _, err := range []error{errors.New("certificate expired"), ErrKeyConflict, ErrCommitUnknown} {
		if got := Class(err); got != nil {
			t.Errorf("Class(%v) = %v, want none", err, got)
		}
	}
}
