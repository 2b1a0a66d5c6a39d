package sim

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestWALIndexSeesEveryCommit writes to a SQLite file in WAL mode in
// every way a step can, on a connection other than the reader's, and
// checks that the wal-index's header reports a change exactly after a
// commit that changed the file (one after a checkpoint that restarts the
// WAL included) and after forget, never after a read or a rollback; and
// that forget fails once the wal-index it reads is no longer the file's,
// which SQLite makes anew after the file's last connection closed.
func TestWALIndexSeesEveryCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		return db
	}
	db := open()
	exec := func(db *sql.DB, q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	inTx := func(db *sql.DB, q string, commit bool) {
		t.Helper()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
		end := tx.Rollback
		if commit {
			end = tx.Commit
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
	}
	exec(db, "CREATE TABLE rows (n INTEGER)")
	w, err := openWALIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	forget := func() {
		t.Helper()
		if err := w.forget(); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name    string
		do      func()
		changed bool
	}{
		{"first look", func() {}, true},
		{"nothing", func() {}, false},
		{"a read", func() { exec(db, "SELECT count(*) FROM rows") }, false},
		{"a commit", func() { exec(db, "INSERT INTO rows VALUES (1)") }, true},
		{"a read after it", func() { exec(db, "SELECT count(*) FROM rows") }, false},
		{"a transaction rolled back", func() { inTx(db, "INSERT INTO rows VALUES (2)", false) }, false},
		{"an update in a transaction", func() { inTx(db, "UPDATE rows SET n = n + 1", true) }, true},
		{"a delete", func() { exec(db, "DELETE FROM rows") }, true},
		{"a checkpoint that restarts the WAL, then a commit", func() {
			exec(db, "PRAGMA wal_checkpoint(TRUNCATE)")
			exec(db, "INSERT INTO rows VALUES (3)")
		}, true},
		{"a read after them", func() { exec(db, "SELECT count(*) FROM rows") }, false},
		{"forget", forget, true},
	} {
		step.do()
		got, err := w.changed()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got != step.changed {
			t.Errorf("%s: changed() = %v, want %v", step.name, got, step.changed)
		}
	}
	// Once every connection closed the file, SQLite makes its wal-index
	// anew at the next open, which w does not read: forget says so.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open()
	defer db.Close()
	exec(db, "INSERT INTO rows VALUES (4)")
	if err := w.forget(); err == nil || !strings.Contains(err.Error(), "commits may have gone unseen") {
		t.Errorf("forget after the wal-index was made anew: %v, want it to say commits may have gone unseen", err)
	}
}

// TestWALIndexOnlyInWALMode checks that a file in another journal mode
// has no wal-index to read: the lane asks its data_version instead.
func TestWALIndexOnlyInWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(DELETE)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE rows (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := openWALIndex(path); !errors.Is(err, errNoWALIndex) {
		t.Fatalf("openWALIndex of a file in DELETE mode: %v, want errNoWALIndex", err)
	}
}
