package sim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/system"
	"modernc.org/sqlite"
)

// fileConnector connects to a SQLite file as the system's handles do:
// every transaction BEGIN IMMEDIATE, and no wait for a lock.
type fileConnector struct{ dsn string }

func (c fileConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c fileConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

func newFileConnector(t *testing.T) fileConnector {
	t.Helper()
	c := fileConnector{filepath.Join(t.TempDir(), "kept.db") + "?_txlock=immediate&_pragma=busy_timeout(0)"}
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return c
}

// idleConns is how many connections k keeps for c.
func (k *sqliteKeeper) idleConns(c driver.Connector) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.idle[c])
}

// idleTotal is how many connections k keeps in all.
func (k *sqliteKeeper) idleTotal() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, kept := range k.idle {
		n += len(kept)
	}
	return n
}

// TestSqliteKeeperKeepsOnlyCleanConnections: a handle that closes gives
// its connection to the next handle opened the same way, but never one
// on which a transaction may still be open, whose lock a crash must let
// go of.
func TestSqliteKeeperKeepsOnlyCleanConnections(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// begin says whether a transaction begins, which writes a row;
		// end, unless nil, ends it before the connection closes.
		begin bool
		end   func(driver.Tx) error
		kept  bool
		rows  int // the rows the file holds after
	}{
		{"idle", false, nil, true, 0},
		{"committed", true, driver.Tx.Commit, true, 1},
		{"rolled back", true, driver.Tx.Rollback, true, 0},
		{"closed inside a transaction", true, nil, false, 0}, // the process dies with it open
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var k sqliteKeeper
			defer k.close()
			inner := newFileConnector(t)
			c := k.wrap(inner)
			conn, err := c.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.begin {
				tx, err := conn.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.(driver.ExecerContext).ExecContext(ctx, `INSERT INTO t VALUES (1)`, nil); err != nil {
					t.Fatal(err)
				}
				if tc.end != nil {
					if err := tc.end(tx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			if got := k.idleConns(inner); got != map[bool]int{true: 1, false: 0}[tc.kept] {
				t.Fatalf("kept %d connections, want kept=%v", got, tc.kept)
			}
			// Whatever was kept, the file is free: another connection
			// writes at once, and only a committed row is there.
			other, err := inner.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := other.(driver.ExecerContext).ExecContext(ctx, `INSERT INTO t VALUES (2)`, nil); err != nil {
				t.Fatalf("another connection cannot write: %v", err)
			}
			db := sql.OpenDB(inner)
			defer db.Close()
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM t WHERE v = 1`).Scan(&n); err != nil || n != tc.rows {
				t.Fatalf("rows the transaction wrote: %d (%v), want %d", n, err, tc.rows)
			}
			next, err := c.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if reused := next == conn; reused != tc.kept {
				t.Errorf("next connection reused the first: %v, want %v", reused, tc.kept)
			}
		})
	}
}

// TestSqliteKeeperStatements: a statement closed stays prepared for the
// next Prepare of its query, and one still in use is never handed out
// twice.
func TestSqliteKeeperStatements(t *testing.T) {
	ctx := context.Background()
	var k sqliteKeeper
	defer k.close()
	conn, err := k.wrap(newFileConnector(t)).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prep := conn.(driver.ConnPrepareContext)
	const q = `SELECT count(*) FROM t`
	first, err := prep.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	second, err := prep.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatal("a statement in use was handed out again")
	}
	second.Close()
	first.Close()
	again, err := prep.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatal("a closed statement was prepared anew instead of reused")
	}
	rows, err := again.(driver.StmtQueryContext).QueryContext(ctx, nil)
	if err != nil {
		t.Fatalf("a reused statement does not run: %v", err)
	}
	rows.Close()
}

// TestSqliteKeeperLetsGoAfterClose: a connection given back after the
// keeper closed (its file may be gone) is closed, not kept.
func TestSqliteKeeperLetsGoAfterClose(t *testing.T) {
	var k sqliteKeeper
	inner := newFileConnector(t)
	conn, err := k.wrap(inner).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := k.close(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if n := k.idleConns(inner); n != 0 {
		t.Fatalf("kept %d connections made before the keeper closed, want 0", n)
	}
}

// TestSqliteKeeperServesTheSystem: the system's own handles on a file
// give their connections back and take them again, the app's and the
// receiver's alike.
func TestSqliteKeeperServesTheSystem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var k sqliteKeeper
	defer k.close()
	for i := range 3 {
		app, err := system.Open(ctx, filepath.Join(dir, appFile), system.Options{Harness: system.Harness{WrapSQLite: k.wrap}})
		if err != nil {
			t.Fatal(err)
		}
		crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, crmFile), system.CRMOptions{WrapSQLite: k.wrap})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && k.idleTotal() != 0 {
			t.Fatalf("open %d: %d connections kept unused, want every one taken again", i+1, k.idleTotal())
		}
		if _, err := app.RecordApproval(ctx, fmt.Sprintf("case-%d", i), "Call back"); err != nil {
			t.Fatal(err)
		}
		if _, err := crm.Tasks(ctx); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(app.Close(), crm.Close()); err != nil {
			t.Fatal(err)
		}
		if k.idleTotal() < 2 {
			t.Fatalf("open %d: %d connections kept after the handles closed, want the app's and the receiver's", i+1, k.idleTotal())
		}
	}
}
