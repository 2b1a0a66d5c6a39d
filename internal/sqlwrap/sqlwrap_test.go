package sqlwrap

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
	"modernc.org/sqlite"
)

// fileConnector connects to a SQLite file as the system's handles do:
// every transaction BEGIN IMMEDIATE, and a wait for a lock of busy
// milliseconds.
type fileConnector struct{ dsn string }

func (c fileConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c fileConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

// newFile makes a SQLite file with one table, t, and returns a
// connector to it that waits for no lock.
func newFile(t *testing.T) fileConnector {
	t.Helper()
	c := fileConnector{filepath.Join(t.TempDir(), "wrapped.db") + "?_txlock=immediate&_pragma=busy_timeout(0)"}
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return c
}

// waiting is a connector to c's file that waits up to a minute for a
// lock.
func (c fileConnector) waiting() fileConnector {
	return fileConnector{strings.Replace(c.dsn, "busy_timeout(0)", "busy_timeout(60000)", 1)}
}

// count is how many rows of t hold v, read by a connection of its own.
func count(t *testing.T, c driver.Connector, v int) int {
	t.Helper()
	db := sql.OpenDB(c)
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE v = ?`, v).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkFree checks that no transaction holds file's lock, for another
// connection writes at once, and that the transaction under test left
// rows rows (of value 1).
func checkFree(t *testing.T, file fileConnector, rows int) {
	t.Helper()
	other, err := file.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := exec(other, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatalf("another connection cannot write: %v", err)
	}
	if n := count(t, file, 1); n != rows {
		t.Errorf("the transaction left %d rows, want %d", n, rows)
	}
}

// exec runs query on conn.
func exec(conn driver.Conn, query string) error {
	_, err := conn.(driver.ExecerContext).ExecContext(context.Background(), query, nil)
	return err
}

// idleConns is how many connections w keeps for c.
func (w *Conns) idleConns(c driver.Connector) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.idle[c])
}

// idleTotal is how many connections w keeps in all.
func (w *Conns) idleTotal() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, kept := range w.idle {
		n += len(kept)
	}
	return n
}

var errCut = errors.New("the harness cut it")

// failedWith reports whether a call failed with want, and with
// driver.ErrBadConn, which has database/sql drop the connection; or, if
// want is nil, did not fail.
func failedWith(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want) && errors.Is(err, driver.ErrBadConn)
}

// TestFaults: what each fault does to a transaction open when it
// strikes: a cut loses it and every later call on its connection fails
// with the cut's error; a refusal does so and fails every later
// Connect. After each, the file's lock is free: another connection writes at once.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		fault      func(*Conns)
		commitErr  error // what the COMMIT and every later call fail with
		rows       int   // the rows the transaction left
		connectErr error // what the next Connect fails with
	}{
		{"none", func(*Conns) {}, nil, 1, nil},
		{"cut", func(w *Conns) { w.Cut(errCut) }, errCut, 0, nil},
		{"refused", func(w *Conns) { w.Refuse(errCut) }, errCut, 0, errCut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w Conns
			file := newFile(t)
			wrapped := w.Wrap(file)
			conn, err := wrapped.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			tx, err := conn.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := exec(conn, `INSERT INTO t VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			tc.fault(&w)
			commitErr := tx.Commit()
			laterErr := exec(conn, `SELECT 1`)
			for what, err := range map[string]error{"the COMMIT": commitErr, "a later call": laterErr} {
				if !failedWith(err, tc.commitErr) {
					t.Errorf("%s: got %v, want %v", what, err, tc.commitErr)
				}
			}
			if valid := conn.(driver.Validator).IsValid(); valid != (tc.commitErr == nil) {
				t.Errorf("IsValid = %v after the fault", valid)
			}
			checkFree(t, file, tc.rows)
			next, err := wrapped.Connect(ctx)
			if !errors.Is(err, tc.connectErr) {
				t.Fatalf("the next Connect: got %v, want %v", err, tc.connectErr)
			}
			if err == nil {
				defer next.Close()
				if err := exec(next, `INSERT INTO t VALUES (3)`); err != nil {
					t.Fatalf("the next connection: %v", err)
				}
			}
		})
	}
}

// TestCutWaitsForTheCallUnderWay: a cut while a call waits for the
// file's lock returns at once; the call finishes, as if the cut came
// just after it, and the connection closes then.
func TestCutWaitsForTheCallUnderWay(t *testing.T) {
	ctx := context.Background()
	file := newFile(t)
	holder, err := file.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := exec(holder, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	var w Conns
	waiter, err := w.Wrap(file.waiting()).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	done := make(chan error)
	go func() { done <- exec(waiter, `INSERT INTO t VALUES (1)`) }()
	for len(waiter.(*conn).mu) == 0 { // until the INSERT holds the connection
		runtime.Gosched()
	}
	if n := w.Cut(errCut); n != 1 {
		t.Fatalf("cut %d connections, want 1", n)
	}
	if err := exec(holder, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call under way at the cut: %v", err)
	}
	if n := count(t, file, 1); n != 1 {
		t.Fatalf("the call under way at the cut wrote %d rows, want 1", n)
	}
	c := waiter.(*conn)
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection cut during a call is still open 10 s after the call returned")
		}
	}
	if err := exec(waiter, `SELECT 1`); !failedWith(err, errCut) {
		t.Fatalf("a call after the cut: got %v, want %v", err, errCut)
	}
}

// TestKeepsOnlyCleanConnections: with Keep, a handle that closes gives
// its connection to the next handle opened the same way, but never one
// on which a transaction may still be open, whose lock a crash must let
// go of, nor one that was cut.
func TestKeepsOnlyCleanConnections(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// begin says whether a transaction begins, which writes a row;
		// end, unless nil, ends it before the connection closes.
		begin bool
		end   func(driver.Tx) error
		cut   bool
		kept  bool
		rows  int // the rows the file holds after
	}{
		{"idle", false, nil, false, true, 0},
		{"committed", true, driver.Tx.Commit, false, true, 1},
		{"rolled back", true, driver.Tx.Rollback, false, true, 0},
		{"closed inside a transaction", true, nil, false, false, 0}, // the process dies with it open
		{"cut", false, nil, true, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := Conns{Keep: true}
			defer w.Drop()
			file := newFile(t)
			c := w.Wrap(file)
			conn, err := c.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.begin {
				tx, err := conn.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := exec(conn, `INSERT INTO t VALUES (1)`); err != nil {
					t.Fatal(err)
				}
				if tc.end != nil {
					if err := tc.end(tx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.cut {
				w.Cut(errCut)
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			if got := w.idleConns(file); got != map[bool]int{true: 1, false: 0}[tc.kept] {
				t.Fatalf("kept %d connections, want kept=%v", got, tc.kept)
			}
			// Whatever was kept, the file is free, and only a committed
			// row is there.
			checkFree(t, file, tc.rows)
			next, err := c.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if reused := next == conn; reused != tc.kept {
				t.Errorf("next connection reused the first: %v, want %v", reused, tc.kept)
			}
			if err := exec(next, `INSERT INTO t VALUES (3)`); err != nil {
				t.Errorf("the next connection: %v", err)
			}
		})
	}
}

// TestKeptConnectionCutLater: a Cut that took its list of open
// connections before a handle closed one, and cuts it only once it was
// kept, leaves a cut connection among the kept: the next Connect passes
// it over for a new one.
func TestKeptConnectionCutLater(t *testing.T) {
	ctx := context.Background()
	w := Conns{Keep: true}
	defer w.Drop()
	file := newFile(t)
	c := w.Wrap(file)
	first, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.idleConns(file); got != 1 {
		t.Fatalf("kept %d connections, want 1", got)
	}
	first.(*conn).cut(errCut) // the racing Cut's turn comes now
	next, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next == first {
		t.Error("the next Connect took the kept connection that was cut")
	}
	if err := exec(next, `INSERT INTO t VALUES (4)`); err != nil {
		t.Errorf("the next connection: %v", err)
	}
}

// TestKeepsStatements: with Keep, a statement closed stays prepared for
// the next Prepare of its query, and one still in use is never handed
// out twice.
func TestKeepsStatements(t *testing.T) {
	ctx := context.Background()
	w := Conns{Keep: true}
	defer w.Drop()
	conn, err := w.Wrap(newFile(t)).Connect(ctx)
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

// TestDropLetsGo: a connection given back after a Drop (its file may be
// gone) is closed, not kept.
func TestDropLetsGo(t *testing.T) {
	w := Conns{Keep: true}
	file := newFile(t)
	conn, err := w.Wrap(file).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.idleConns(file); n != 0 {
		t.Fatalf("kept %d connections made before the Drop, want 0", n)
	}
}

// TestKeepServesTheSystem: the system's own handles on a file give
// their connections back and take them again, the app's and the
// receiver's alike.
func TestKeepServesTheSystem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := Conns{Keep: true}
	defer w.Drop()
	for i := range 3 {
		app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{Harness: system.Harness{WrapSQLite: w.Wrap}})
		if err != nil {
			t.Fatal(err)
		}
		crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{WrapSQLite: w.Wrap})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && w.idleTotal() != 0 {
			t.Fatalf("open %d: %d connections kept unused, want every one taken again", i+1, w.idleTotal())
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
		if w.idleTotal() < 2 {
			t.Fatalf("open %d: %d connections kept after the handles closed, want the app's and the receiver's", i+1, w.idleTotal())
		}
	}
}
