package system

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The schemas of the SQLite databases: the version steps of each kind, by
// the files of schema/sqlite (see schemaFiles), and migrate, which applies
// them. A file's schema version is in SQLite's user_version, its kind in
// application_id.

// kind describes one kind of handoff database: its name in messages, its
// mark in SQLite's application_id header field, and its schema as a list
// of migrations, where migrations[v] takes a file from schema version v to
// v+1. A new file runs every migration in one transaction.
type kind struct {
	name       string
	appID      int32
	migrations []string
	// stamp, run after upgrading a file with ?1 the time of the upgrade
	// (milliseconds), gives the rows of an older schema the times it did
	// not keep: their clocks start at the upgrade.
	stamp string
}

// version is the schema version this code reads and writes.
func (k kind) version() int32 { return int32(len(k.migrations)) }

// versionOf is the schema version of a file marked appID whose
// user_version is userVersion. The first release marked its files without
// setting user_version: a marked file at 0 has the first schema.
// A file without k's mark has no schema of k's, whatever user_version says.
func (k kind) versionOf(appID, userVersion int32) int32 {
	switch {
	case appID != k.appID:
		return 0
	case userVersion == 0:
		return 1
	}
	return userVersion
}

// appDatabase is the app database: approvals, outbox rows, and which CRM
// they are delivered to. Its mark is "HOFF" in SQLite's application_id.
// Times are integer milliseconds since the Unix epoch, 0 where unknown.
var appDatabase = kind{name: "a handoff app database", appID: 0x484f4646, migrations: []string{
	schemaFile("sqlite/app/001_first.sql"),
	schemaFile("sqlite/app/002_leases.sql"),
	schemaFile("sqlite/app/003_blocked.sql"),
	schemaFile("sqlite/app/004_history.sql"),
	schemaFile("sqlite/app/005_retry_hint.sql"),
},
	// A row from before version 2 is as old as the upgrade, for the time
	// budget, and one already attempted was first claimed then, for the
	// retention rule: the CRM's upgrade remembers its keys from then too.
	stamp: `UPDATE outbox SET created_at = ?1, next_attempt_at = ?1,
		first_claimed_at = CASE WHEN attempts > 0 THEN ?1 ELSE 0 END WHERE created_at = 0`,
}

// crmDatabase is the receiver database: tasks by key, and the identity
// that app databases remember it by. Its mark is "CRM1" in SQLite's
// application_id.
var crmDatabase = kind{name: "a handoff CRM database", appID: 0x43524d31, migrations: []string{
	schemaFile("sqlite/crm/001_first.sql"),
	schemaFile("sqlite/crm/002_identity.sql"),
},
	// A key stored before version 2 is remembered from the upgrade on, as
	// the app's upgrade counts its first claims from then.
	stamp: `UPDATE keys SET stored_at = ?1 WHERE stored_at = 0`,
}

// migrate sets WAL mode and brings the schema of the database at path up
// to k's version in one transaction, marking the file as k. It returns
// the version it upgraded the file from, 0 when it made the schema of a
// new file or found it up to date. openDB calls it only for a new file or
// an older schema, so that opening a database that is up to date takes no
// write lock.
func migrate(ctx context.Context, db *sql.DB, path string, k kind, now time.Time) (from int32, err error) {
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return 0, driverError("setting WAL mode on "+path, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, driverError("opening "+path, err)
	}
	defer tx.Rollback()
	// Read inside the write transaction: another process may have created
	// or upgraded the schema since the header was read.
	var appID, version int32
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, driverError("reading "+path, err)
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, driverError("reading "+path, err)
	}
	version = k.versionOf(appID, version)
	switch {
	case appID != 0 && appID != k.appID:
		return 0, fmt.Errorf("%w: %s is not %s (its application id is %#x)", ErrWrongDatabase, path, k.name, appID)
	case version > k.version():
		return 0, fmt.Errorf("%w: %s has schema version %d; this handoff knows up to %d", ErrNewerSchema, path, version, k.version())
	case appID == k.appID && version == k.version():
		return 0, nil
	}
	for v := version; v < k.version(); v++ {
		if _, err := tx.ExecContext(ctx, k.migrations[v]); err != nil {
			return 0, driverError(fmt.Sprintf("upgrading the schema of %s to version %d", path, v+1), err)
		}
	}
	if _, err := tx.ExecContext(ctx, k.stamp, now.UnixMilli()); err != nil {
		return 0, driverError("stamping the upgraded rows of "+path, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d", k.appID, k.version())); err != nil {
		return 0, driverError("marking "+path, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, driverError("committing the schema of "+path, err)
	}
	return version, nil
}
