package system

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Durability says how far a commit must reach before it returns.
type Durability int

const (
	// Durable syncs every commit to stable storage (synchronous=FULL): a
	// commit survives a power loss. The default.
	Durable Durability = iota

	// ProcessSafe hands every commit to the operating system without syncing
	// it (synchronous=OFF): a commit survives the process dying, not the
	// machine. The simulation uses it because its restarts model process
	// crashes, which lose nothing the operating system already holds.
	ProcessSafe
)

// Synchronous is the value of SQLite's synchronous pragma for d, or an
// ErrInvalidInput error for an unknown Durability.
func (d Durability) Synchronous() (string, error) {
	switch d {
	case Durable:
		return "FULL", nil
	case ProcessSafe:
		return "OFF", nil
	}
	return "", invalid("unknown durability %d", int(d))
}

// busyTimeoutMillis is how long a write waits for another process's write
// lock before it fails with ErrBusy.
const busyTimeoutMillis = 5000

// openDB opens the SQLite file at path for one kind of handoff database,
// identified by appID (SQLite's application_id header field). A new or empty
// file gets schema and appID; a file with another application id is refused
// with ErrWrongDatabase before anything in it is changed. The database runs
// in WAL mode: a commit appends to the log and syncs once, and readers never
// block the single writer.
func openDB(ctx context.Context, path string, appID int32, schema string, d Durability) (*sql.DB, error) {
	if path == "" {
		return nil, invalid("database path is empty")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, invalid("database path %q contains '?' or '#'", path)
	}
	sync, err := d.Synchronous()
	if err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(%s)",
		path, busyTimeoutMillis, sync)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, driverError("opening "+path, err)
	}
	// One connection: SQLite serialises writers anyway, and a single
	// connection keeps every statement of a transaction on it.
	db.SetMaxOpenConns(1)
	if err := prepare(ctx, db, path, appID, schema); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepare checks the application id of the file and creates the schema.
func prepare(ctx context.Context, db *sql.DB, path string, appID int32, schema string) error {
	var found int32
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&found); err != nil {
		return driverError("reading "+path, err)
	}
	if found != 0 && found != appID {
		return fmt.Errorf("%w: %s has application id %#x, want %#x", ErrWrongDatabase, path, found, appID)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return driverError("setting WAL mode on "+path, err)
	}
	if found == appID {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return driverError("creating the schema of "+path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return driverError("creating the schema of "+path, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d", appID)); err != nil {
		return driverError("marking "+path, err)
	}
	return driverError("creating the schema of "+path, tx.Commit())
}
