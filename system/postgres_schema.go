package system

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The schema of a PostgreSQL app database: the version steps, by the
// files of schema/postgres/app (see schemaFiles), and preparePostgres,
// which applies them. The version is in the schema's own table
// handoff_version, with the kind "app".

// postgresVersion is the schema version of a PostgreSQL app database.
// Version 2 made approvals.title BYTEA, version 3 indexed the blocked
// rows, version 4 keeps each row's history, version 5 whether a row's
// wait is the receiver's retry hint; an app database of an older version
// is migrated when it is opened for writing (see migrations).
const postgresVersion = 5

// postgresSchema creates the tables of an app database at postgresVersion
// in the schema on the search path.
var postgresSchema = schemaFile("postgres/app/create.sql")

// migrations are the statements that take an app database of each
// version below postgresVersion to the next, by the version they start
// from, with every table named as SCHEMA.table: preparePostgres puts the
// app database's schema in SCHEMA's place.
var migrations = map[int]string{
	1: schemaFile("postgres/app/002_title_bytea.sql"),
	2: schemaFile("postgres/app/003_blocked.sql"),
	3: schemaFile("postgres/app/004_history.sql"),
	4: schemaFile("postgres/app/005_retry_hint.sql"),
}

// preparePostgres checks what schema t.schema holds and, unless
// readOnly, creates the tables of an app database in it when it holds
// none, or migrates one of an older version: an app database of this
// version is opened at once; an empty or older schema is looked at again,
// and filled or migrated, under a lock that one opening at a time holds.
// Read-only, an older app database is read as it is: its tables have the
// same columns, and what they hold scans into the same Go types. It
// returns the version it migrated the schema from, 0 when it made the
// tables or migrated nothing.
func preparePostgres(ctx context.Context, db *sql.DB, t postgresTarget, readOnly bool) (from int, err error) {
	version, err := inspectSchema(ctx, db, t)
	switch {
	case err != nil || version == postgresVersion:
		return 0, err
	case readOnly && version == 0:
		return 0, fmt.Errorf("%w: schema %s in %s holds no handoff app database", ErrNotFound, t.schema, t.shown)
	case readOnly:
		return 0, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, driverError("opening "+t.shown, err)
	}
	defer tx.Rollback()
	// Making or migrating the schema is set-up, done once, not a write
	// that a busy database should refuse: it waits for the locks it
	// takes as long as ten seconds, however short the handle's busy
	// timeout.
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return 0, driverError("opening "+t.shown, err)
	}
	if _, err := tx.ExecContext(ctx, sqlSerialise, "handoff schema "+t.schema); err != nil {
		return 0, driverError("opening "+t.shown, err)
	}
	// Another opening may have made or migrated it meanwhile.
	switch version, err = inspectSchema(ctx, tx, t); {
	case err != nil || version == postgresVersion:
		return 0, err
	case version == 0:
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+t.schema); err != nil {
			return 0, driverError("creating schema "+t.schema, err)
		}
		if _, err := tx.ExecContext(ctx, postgresSchema); err != nil {
			return 0, driverError("creating the tables of schema "+t.schema, err)
		}
		return 0, driverError("creating schema "+t.schema, tx.Commit())
	}
	from = version
	for ; version < postgresVersion; version++ {
		stmts := strings.ReplaceAll(migrations[version], "SCHEMA.", t.schema+".")
		if _, err := tx.ExecContext(ctx, stmts); err != nil {
			return 0, driverError(fmt.Sprintf("migrating schema %s from version %d", t.schema, version), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, driverError("migrating schema "+t.schema, err)
	}
	return from, nil
}

// inspectSchema returns the version of the app database schema t.schema
// holds, 0 when it holds no table, and refuses one that holds tables of
// something else or of a newer handoff. An app database's schema is
// known by its version table, found through the catalog's index; only a
// schema without one has its tables counted.
func inspectSchema(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t postgresTarget) (version int, err error) {
	var hasVersion bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass($1) AND relkind IN ('r', 'p', 'v', 'm', 'f'))`,
		t.schema+".handoff_version").Scan(&hasVersion); err != nil {
		return 0, driverError("reading the tables of schema "+t.schema, err)
	}
	if !hasVersion {
		var tables int
		err := q.QueryRowContext(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`, t.schema).Scan(&tables)
		switch {
		case err != nil:
			return 0, driverError("reading the tables of schema "+t.schema, err)
		case tables == 0:
			return 0, nil
		}
		return 0, fmt.Errorf("%w: schema %s in %s holds tables that are not a handoff app database's; name another (?schema=…)", ErrWrongDatabase, t.schema, t.shown)
	}
	var kind string
	if err := q.QueryRowContext(ctx, `SELECT kind, version FROM `+t.schema+`.handoff_version`).Scan(&kind, &version); err != nil {
		return 0, driverError("reading the schema version", err)
	}
	switch {
	case kind != "app":
		return 0, fmt.Errorf("%w: schema %s in %s is not a handoff app database", ErrWrongDatabase, t.schema, t.shown)
	case version > postgresVersion:
		return 0, fmt.Errorf("%w: schema %s in %s has version %d, this handoff knows %d", ErrNewerSchema, t.schema, t.shown, version, postgresVersion)
	case version < 1:
		return 0, fmt.Errorf("%w: schema %s in %s has version %d, which no handoff made", ErrWrongDatabase, t.schema, t.shown, version)
	}
	return version, nil
}

// DropPostgres drops the schema that target names, with its tables, if
// it holds a handoff app database: what a trial or a test does with an
// app database it made for itself once it is done. A schema that holds
// no app database, or something else, is left as it is (ErrNotFound,
// ErrWrongDatabase).
func DropPostgres(ctx context.Context, target string) error {
	o, err := OpenReadOnly(ctx, target)
	if err != nil {
		return err
	}
	defer o.Close()
	_, err = o.db.ExecContext(ctx, `BEGIN READ WRITE; DROP SCHEMA `+o.q.dialect.schema+` CASCADE; COMMIT`)
	return driverError("dropping schema "+o.q.dialect.schema, err)
}
