package system

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// TestLockedIsBusy: SQLITE_LOCKED, a table in use by the same
// connection, is ErrBusy as SQLITE_BUSY is: the write may go through
// once the other statement is done.
func TestLockedIsBusy(t *testing.T) {
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
